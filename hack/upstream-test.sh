#!/usr/bin/env bash
# Runs an upstream unit test in a variant's worktree with the flags make test-unit uses
# (upstream_go_test in build/lib.sh: CGO_ENABLED=0, -trimpath, the pinned Go toolchain):
#   hack/upstream-test.sh PACKAGE TEST_REGEX [VARIANT]
#   e.g. hack/upstream-test.sh k8s.io/client-go/tools/cache '^TestReflectorRelistOfAListWatchIsUnpaged$'
#        hack/upstream-test.sh pkg/controller/endpoint . without-0004
# PACKAGE is an import path (k8s.io/...) or a directory of the upstream tree. Upstream's
# integration tests have their own runner: build/test-upstream-integration.sh.
set -o errexit -o nounset -o pipefail
. "$(dirname "$0")/../build/lib.sh"

if [ $# -lt 2 ] || [ $# -gt 3 ]; then
  echo "usage: $0 PACKAGE TEST_REGEX [VARIANT]" >&2
  exit 2
fi
package=$1 test=$2 variant=${3:-patched}
case "${package}" in
  k8s.io/*) ;;
  *) package=./${package#./} ;;
esac
worktree=$(checkout_variant "${variant}")
cd "${worktree}"
upstream_go_test -count=1 -v -run "${test}" "${package}"

#!/usr/bin/env bash
# Runs upstream's own tests of every package that a non-build patch touches, on the patched tree,
# then this repository's Go unit tests (the regression suites under test/ run separately).
#   build/test-unit.sh [upstream|repo]   (default both; make test runs the two in different lanes)
set -o errexit -o nounset -o pipefail
. "$(dirname "$0")/lib.sh"

upstream_tests() {
  local worktree packages
  worktree=$(checkout_variant patched)
  # Upstream's integration packages need etcd and an apiserver: make test-upstream-integration runs them.
  mapfile -t packages < <(changed_packages stock patched | grep -v '^k8s\.io/kubernetes/test/integration/')
  if [ ${#packages[@]} -eq 0 ]; then
    log "no non-build patch touches Go code yet"
    return
  fi
  log "upstream tests of the ${#packages[@]} packages the series touches"
  printf '  %s\n' "${packages[@]}" >&2
  # Some upstream tests leave directories in TMPDIR (pkg/volume/rbd): give them one to lose.
  scratch=$(mktemp -d)
  trap 'rm -rf "${scratch}"' EXIT
  # Four packages at a time on two cores: some of them mostly sleep (pkg/volume/csi, 158 s).
  (cd "${worktree}" && TMPDIR="${scratch}" upstream_go_test -p 4 -count=1 "${packages[@]}")
}

repo_tests() {
  log "this repository's unit tests"
  cd "${REPO_ROOT}"
  # test/pipeline runs the scripts against bad input, its tests in parallel: 4-6 min alone, past
  # go test's default 10 min beside another lane's suites on a 2-core machine.
  go test -count=1 -timeout 20m ./build/... ./cmd/... ./pkg/... ./test/pipeline/... ./test/bench/... ./test/harness/... ./test/kubeadmnode/... ./test/debpkg/... ./test/conformance/report/... ./test/e2e/runc-oom-clamp/
  # test/conformance's other tests need a conformance build and a node (make conformance).
  go test -count=1 -run '^(TestUnexpectedPulls|TestPhaseFailure)$' ./test/conformance/
  # The image builder is its own module (go-containerregistry needs newer libraries than envtest).
  (cd images/builder && go test -count=1 ./...)
}

# Each call on its own line: errexit does not reach into a function called left of && or ||.
case "${1:-all}" in
  all)
    upstream_tests
    repo_tests
    ;;
  upstream) upstream_tests ;;
  repo) repo_tests ;;
  *) die "usage: $0 [upstream|repo] (got '$1')" ;;
esac

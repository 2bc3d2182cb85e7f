#!/usr/bin/env bash
# Runs upstream's own integration tests (test/integration/...) from a variant's tree against the
# etcd the pipeline built for the stock harness, compiled once with make build's flags, one line
# per test; then holds the run to the committed stock baseline, or records a stock run in it:
#   build/test-upstream-integration.sh VARIANT PACKAGE[:TEST_REGEX]...     judge VARIANT
#   build/test-upstream-integration.sh --record-baseline PACKAGE[:TEST_REGEX]...   run stock, record
# A test that fails runs once more; passing then, it is flaky. The rule (build/upstreamtest):
# every test that passes on stock passes on VARIANT. UPSTREAM_INTEGRATION_PARALLEL packages run
# at once (default 2: on 2 cores the tests mostly wait; stock and patched ran side by side with no
# flake). Logs and results.json: _output/test-logs/upstream-integration-<variant>/.
set -o errexit -o nounset -o pipefail
. "$(dirname "$0")/lib.sh"

BASELINE=${REPO_ROOT}/build/upstreamtest/stock-baseline.yaml
[ $# -ge 2 ] || die "usage: $0 VARIANT|--record-baseline PACKAGE[:TEST_REGEX]..."
if [ "$1" = --record-baseline ]; then
  variant=stock mode=(-record "${BASELINE}")
else
  variant=$1 mode=(-judge "${BASELINE}")
fi
shift
etcd_dir=$(bin_dir stock)
[ -x "${etcd_dir}/etcd" ] || die "no ${etcd_dir}/etcd; run 'make build' (or build/build.sh stock etcd)"
tool="${OUTPUT_DIR}/tools/upstream-integration"
(cd "${REPO_ROOT}" && go build -trimpath -o "${tool}" ./build/cmd/upstream-integration) || die "cannot build build/cmd/upstream-integration"
worktree=$(checkout_variant "${variant}")
log_dir="${OUTPUT_DIR}/test-logs/upstream-integration-${variant}"
rm -rf "${log_dir}"
# The tests leave etcd data directories in TMPDIR when they fail: give them one to lose.
scratch=$(mktemp -d)
trap 'rm -rf "${scratch}"' EXIT

TMPDIR="${scratch}" CGO_ENABLED=0 "${tool}" -variant "${variant}" -tree "${worktree}" \
  -bin-dir "${OUTPUT_DIR}/test-bin/upstream-integration-${variant}" -log-dir "${log_dir}" \
  -path-prefix "${etcd_dir}" -patches "${PATCHES_DIR}" -parallel "${UPSTREAM_INTEGRATION_PARALLEL:-2}" \
  "${mode[@]}" "$@"

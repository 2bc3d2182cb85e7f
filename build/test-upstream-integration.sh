#!/usr/bin/env bash
# Runs upstream's own integration tests (test/integration/...) from a variant's tree against the
# etcd the pipeline built for the stock harness:
#   build/test-upstream-integration.sh VARIANT PACKAGE[:TEST_REGEX]...
# e.g. build/test-upstream-integration.sh patched 'test/integration/garbagecollector:^TestCRDDeletionCascading$'
# A test that fails runs once more: passing then, it is reported FLAKY (and does not fail the run);
# failing again, it fails the run, named with its log. Logs: _output/test-logs/upstream-integration-<variant>/.
set -o errexit -o nounset -o pipefail
. "$(dirname "$0")/lib.sh"

[ $# -ge 2 ] || die "usage: $0 VARIANT PACKAGE[:TEST_REGEX]..."
variant=$1
shift
etcd_dir=$(bin_dir stock)
[ -x "${etcd_dir}/etcd" ] || die "no ${etcd_dir}/etcd; run 'make build' (or build/build.sh stock etcd)"
worktree=$(checkout_variant "${variant}")
log_dir="${OUTPUT_DIR}/test-logs/upstream-integration-${variant}"
rm -rf "${log_dir}"
mkdir -p "${log_dir}"

# run_package PACKAGE REGEX LOG: upstream's test binary starts its own etcd from PATH. Not
# -trimpath (unlike upstream_go_test): kube-apiserver's test server finds its certificate fixtures
# through its source file's path.
run_package() {
  (cd "${worktree}" && PATH="${etcd_dir}:${PATH}" CGO_ENABLED=0 \
    go test -count=1 -timeout 10m -v "./$1" -run "$2") >"$3" 2>&1
}

failed=()
for spec in "$@"; do
  package=${spec%%:*}
  regex=.
  [ "${spec}" = "${package}" ] || regex=${spec#*:}
  [ -d "${worktree}/${package}" ] || die "no package ${package} in the ${variant} tree"
  log_file="${log_dir}/$(echo "${package}" | tr / _).log"
  retry_log=${log_file%.log}.retry.log
  log "${variant}: upstream ${package} -run '${regex}' (log: ${log_file})"
  # last: the log of the last run, whose tests are reported one line each with result and time.
  if run_package "${package}" "${regex}" "${log_file}"; then
    result=pass last=${log_file}
  elif run_package "${package}" "${regex}" "${retry_log}"; then
    result=FLAKY last=${retry_log}
  else
    result=FAIL last=${retry_log}
    failed+=("${package} ($(grep -- '--- FAIL' "${retry_log}" | awk '{print $3}' | paste -sd, -); see ${retry_log})")
  fi
  grep -E -- '^--- (PASS|FAIL|SKIP)' "${last}" | sed "s|^|  ${result}: ${package} |" >&2 || true
done
if [ ${#failed[@]} -gt 0 ]; then
  printf 'test-upstream-integration: %s: failed twice: %s\n' "${variant}" "${failed[@]}" >&2
  exit 1
fi
log "test-upstream-integration: ${variant}: $# package(s) passed"

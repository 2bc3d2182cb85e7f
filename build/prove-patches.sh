#!/usr/bin/env bash
# Proves each regression test differential: for every patch with a "Regression-Test: <package>
# <TestName>" field, builds the series without that patch (variant without-NNNN) and requires the
# test to FAIL against it. That the same test passes on the patched build is checked by
# `make test-regression`. Optional arguments limit the run to those patch files.
set -o errexit -o nounset -o pipefail
. "$(dirname "$0")/lib.sh"

mapfile -t selected < <(if [ $# -gt 0 ]; then printf '%s\n' "$@" | xargs -n1 basename; else series_patches; fi)
proved=0
failed=()
for name in "${selected[@]}"; do
  patch="${PATCHES_DIR}/${name}"
  [ -f "${patch}" ] || die "no patch ${patch}"
  regression=$(patch_field "${patch}" Regression-Test)
  [ -n "${regression}" ] || continue
  read -r package test_name <<<"${regression}"
  [ -n "${test_name:-}" ] || die "${name}: Regression-Test must be '<package dir> <TestName>', got '${regression}'"
  variant="without-${name%%-*}"

  "$(dirname "$0")/patch.sh" --without "${name}"
  "$(dirname "$0")/build.sh" "${variant}" kube-controller-manager kube-scheduler
  log_file="${OUTPUT_DIR}/test-logs/prove-${variant}.log"
  mkdir -p "$(dirname "${log_file}")"
  log "${name}: ${package} ${test_name} against ${variant} must fail (output: ${log_file})"
  if (cd "${REPO_ROOT}" && VARIANT_UNDER_TEST="${variant}" \
        go test -count=1 -timeout 20m -v "./${package}" -run "^${test_name}\$") >"${log_file}" 2>&1; then
    failed+=("${name}: ${test_name} passes without the patch, so it does not test the patch")
  elif ! grep -q -- "--- FAIL: ${test_name}" "${log_file}"; then
    failed+=("${name}: ${test_name} did not run to a test failure without the patch (see ${log_file})")
  else
    log "${name}: proved: $(grep -m1 -E '^\s+[a-z_]+\.go:[0-9]+: .*want' "${log_file}" | sed 's/^[[:space:]]*//' | cut -c1-200)"
    proved=$((proved + 1))
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  printf 'prove-patches: %s\n' "${failed[@]}" >&2
  exit 1
fi
log "prove-patches: ${proved} regression test(s) fail without their patch"

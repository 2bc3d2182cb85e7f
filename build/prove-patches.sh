#!/usr/bin/env bash
# Proves each regression test differential against the series without its patch:
# - "Regression-Test: <dir of this repo> <TestName>": builds the series without the patch (variant
#   without-NNNN) and requires the suite's test to FAIL against those binaries. That the same test
#   passes on the patched build is checked by `make test-regression`.
# - "Regression-Unit-Test: <Go package> <TestName>" (any number): applies only the
#   patch's *_test.go changes to the series without the patch and requires the test to FAIL there.
#   That it passes on the patched tree is checked by `make test-unit`.
# Optional arguments limit the run to those patches: files, or numbers (0041) as make prove
# PATCH=NNNN passes them. The proofs run PROVE_JOBS (default 2) at a time, while the next patch's
# variant is prepared: the suites spend most of their time waiting on leases and timers.
set -o errexit -o nounset -o pipefail
. "$(dirname "$0")/lib.sh"
need_patchmeta

# patch_named ARG: the series' patch file that ARG names (a path, a file name, or its number).
patch_named() {
  local arg=$1 matches
  if [[ ${arg} =~ ^[0-9]{4}$ ]]; then
    mapfile -t matches < <(series_patches | grep "^${arg}-" || true)
    [ ${#matches[@]} -eq 1 ] || die "patch ${arg}: patches/series has ${#matches[@]} patches numbered so (one expected)"
    echo "${matches[0]}"
  else
    basename "${arg}"
  fi
}

selected=()
if [ $# -gt 0 ]; then
  for arg in "$@"; do
    selected+=("$(patch_named "${arg}")")
  done
else
  mapfile -t selected < <(series_patches)
fi
proof_jobs=${PROVE_JOBS:-2}
[[ ${proof_jobs} =~ ^[1-9][0-9]*$ ]] || die "PROVE_JOBS must be a positive number, got '${proof_jobs}'"
results=$(mktemp -d)
trap 'rm -rf "${results}"' EXIT
started=0

# expect_failure NAME TEST LOG_FILE DIR COMMAND...: runs COMMAND in DIR, which must fail in TEST;
# prints "proved<TAB>reason" or "failed<TAB>why".
expect_failure() {
  local name=$1 test_name=$2 log_file=$3 dir=$4 reason
  shift 4
  if (cd "${dir}" && "$@") >"${log_file}" 2>&1; then
    printf 'failed\t%s\n' "${name}: ${test_name} passes without the patch, so it does not test the patch (see ${log_file})"
  elif grep -q -E '\[(build|setup) failed\]' "${log_file}"; then
    # A test that does not compile proves nothing: name its first error.
    printf 'failed\t%s\n' "${name}: ${test_name} does not build without the patch: $(grep -m1 -E '\.go:[0-9]+:[0-9]+: ' "${log_file}" | sed 's/^[[:space:]]*//' | cut -c1-200); if that names what a patch left out brings, the patch that uses it needs a Requires line (see ${log_file})"
  elif ! grep -q -- "--- FAIL: ${test_name}" "${log_file}"; then
    printf 'failed\t%s\n' "${name}: ${test_name} did not run to a test failure without the patch (see ${log_file})"
  else
    # The failure's own message ("... want ..."), else the test's first log line.
    reason=$(grep -m1 -E '^\s+[a-z0-9_]+\.go:[0-9]+: .*want' "${log_file}" || grep -m1 -E '^\s+[a-z0-9_]+\.go:[0-9]+: ' "${log_file}" || true)
    printf 'proved\t%s\n' "${name}: proved: $(echo "${reason}" | sed 's/^[[:space:]]*//' | cut -c1-200)"
  fi
}

# start_proof NAME TEST LOG_FILE DIR COMMAND...: expect_failure in the background, PROVE_JOBS at
# most at once; its result, with the seconds it took, goes to a file numbered in start order.
start_proof() {
  while [ "$(jobs -rp | wc -l)" -ge "${proof_jobs}" ]; do
    wait -n || true
  done
  started=$((started + 1))
  (
    started_at=${SECONDS}
    outcome=$(expect_failure "$@")
    printf '%s (%d s)\n' "${outcome}" $((SECONDS - started_at))
  ) >"${results}/$(printf '%04d' "${started}")" &
}

for name in "${selected[@]}"; do
  patch="${PATCHES_DIR}/${name}"
  [ -f "${patch}" ] || die "no patch ${patch}"
  has_regression_proof "${patch}" || continue
  regression=$(patch_field "${patch}" Regression-Test)
  mapfile -t unit_tests < <(patch_field_all "${patch}" Regression-Unit-Test)
  variant="without-${name%%-*}"
  log_dir="${OUTPUT_DIR}/test-logs/prove-${variant}"
  mkdir -p "${log_dir}"
  "$(dirname "$0")/patch.sh" --without "${name}"

  if [ -n "${regression}" ]; then
    read -r package test_name <<<"${regression}"
    [ -n "${test_name:-}" ] || die "${name}: Regression-Test must be '<package dir> <TestName>', got '${regression}'"
    "$(dirname "$0")/build.sh" "${variant}" "${SUITE_COMPONENTS[@]}"
    log "${name}: ${package} ${test_name} against ${variant} must fail (output: ${log_dir}/${test_name}.log)"
    start_proof "${name}" "${test_name}" "${log_dir}/${test_name}.log" "${REPO_ROOT}" \
      env VARIANT_UNDER_TEST="${variant}" go test -count=1 -timeout 20m -v "./${package}" -run "^${test_name}\$"
  fi

  if [ ${#unit_tests[@]} -gt 0 ]; then
    worktree=$(checkout_variant "${variant}")
    git -C "${worktree}" apply --include='*_test.go' "${patch}" ||
      die "${name}: its test files do not apply to the series without it"
    for unit_test in "${unit_tests[@]}"; do
      read -r package test_name <<<"${unit_test}"
      [ -n "${test_name:-}" ] || die "${name}: Regression-Unit-Test must be '<Go package> <TestName>', got '${unit_test}'"
      log "${name}: ${package} ${test_name} on ${variant} plus the patch's tests must fail (output: ${log_dir}/${test_name}.log)"
      start_proof "${name}" "${test_name}" "${log_dir}/${test_name}.log" "${worktree}" \
        upstream_go_test -count=1 -v "${package}" -run "^${test_name}\$"
    done
  fi
done
wait
proved=0
failed=()
for result in "${results}"/*; do
  [ -e "${result}" ] || continue
  IFS=$'\t' read -r outcome message <"${result}" || die "a proof left no result (${result})"
  case "${outcome}" in
    proved) log "${message}"; proved=$((proved + 1)) ;;
    failed) failed+=("${message}") ;;
    *) die "a proof left no result (${result})" ;;
  esac
done
if [ ${#failed[@]} -gt 0 ]; then
  # Between the lines hack/what-failed.sh repeats at the end of CI's log.
  {
    echo "=== what failed (prove-patches: ${#failed[@]} of $((proved + ${#failed[@]})) proofs):"
    printf 'prove-patches: %s\n' "${failed[@]}"
    # CI keeps the log, not the files: the end of each failed proof's output.
    for message in "${failed[@]}"; do
      proof_log=$(grep -o -E '\(see [^)]+\.log\)' <<<"${message}" | tail -n 1 | sed -E 's/^\(see //; s/\)$//') || true
      if [ -z "${proof_log}" ] || [ ! -f "${proof_log}" ]; then continue; fi
      echo "--- the end of ${proof_log}:"
      tail -n 20 "${proof_log}"
    done
    echo "=== end of what failed"
  } >&2
  exit 1
fi
log "prove-patches: ${proved} regression test(s) fail without their patch"

#!/usr/bin/env bash
# go test -v "$@", and when it fails, each failed test again with the lines it printed, at the end
# of the output, where the part of a long log that CI keeps shows it. With several packages at
# once go test -v prints each package whole when it ends; go test -json (which gotestsum reads)
# would interleave them.
set -o errexit -o nounset -o pipefail

log=$(mktemp)
trap 'rm -f "${log}"' EXIT
status=0
go test -v "$@" 2>&1 | tee "${log}" || status=$?
[ "${status}" -eq 0 ] && exit 0

echo
echo "=== what failed (go test exited ${status}):"
# A line belongs to the test that the last "=== RUN|CONT|NAME name" line named; a "--- FAIL: name"
# line prints that test's lines. A package's FAIL line prints after its build or vet errors, or
# after the package's last 40 lines when none of its tests said "--- FAIL" (a test binary that
# exited or was killed). A panic prints with the 30 lines after it (a timeout: up to the list of
# running tests, then each of those tests' lines).
awk '
  function reset() { split("", lines); split("", pkg); npkg = 0; current = ""; failed = 0 }
  BEGIN { reset() }
  # A build or vet error comes as "# pkg" and its lines, whenever the compiler says it.
  /^# [^ ]+/ { building = $2; build[building] = $0 "\n"; next }
  building != "" && /^(=== |--- |ok[ \t]|FAIL|PASS)/ { building = "" }
  building != "" { build[building] = build[building] $0 "\n"; next }
  { pkg[++npkg] = $0 }
  match($0, /^=== (RUN|CONT|NAME|PAUSE) +/) {
    current = substr($0, RLENGTH + 1)
    if ($2 == "RUN") lines[current] = ""
    next
  }
  match($0, /^ *--- (PASS|SKIP): /) {
    name = substr($0, RLENGTH + 1); sub(/ \(.*$/, "", name)
    delete lines[name]
    next
  }
  match($0, /^ *--- FAIL: /) {
    name = substr($0, RLENGTH + 1); sub(/ \(.*$/, "", name)
    printf "%s%s\n", lines[name], $0
    failed = 1
    next
  }
  /^(FAIL|ok)[ \t]/ {
    if ($1 == "FAIL") {
      if ($2 in build) printf "%s", build[$2]
      else if (!failed) for (i = (npkg > 40 ? npkg - 40 : 1); i < npkg; i++) print pkg[i]
      print
    }
    reset()
    next
  }
  /^panic: / { panicking = 30; timeout = ($0 ~ /^panic: test timed out/) }
  panicking && timeout && /^$/ {
    panicking = 0
    for (i = 1; i <= n; i++) printf "=== %s printed:\n%s", running[i], lines[running[i]]
    n = 0
    failed = 1
    next
  }
  panicking > 0 {
    print
    panicking--
    if (timeout && $0 ~ /^\t\t[^ ]+ \(/) running[++n] = $1
    if (!panicking) failed = 1
    next
  }
  current != "" { lines[current] = lines[current] $0 "\n" }
' "${log}" || true
# hack/what-failed.sh repeats the block up to here at the end of CI's log.
echo "=== end of what failed"
exit "${status}"

#!/usr/bin/env bash
# what-failed.sh LOG: what failed in a make run whose output is LOG, again, for the end of that
# output. CI keeps only the tail of a long log, and make test's two lanes print each target's
# output whole when it ends, so a failure's own lines can be followed by another target's minutes
# of output and lost. Each stage that fails says what failed between a line "=== what failed..."
# and a line "=== end of what failed" (hack/go-test.sh, build/prove-patches.sh); this prints every
# such block, then each of make's "*** [...] Error" lines with the lines the log had before it
# (the end of a stage that has no block: a script's "error: ..." line, go test's FAIL lines).
# Lines may carry .ci/run's "[mm:ss] " stamp.
set -o errexit -o nounset -o pipefail

[ $# -eq 1 ] || { echo "usage: $0 LOG" >&2; exit 2; }
log=$1
[ -r "${log}" ] || { echo "what-failed: cannot read the log ${log}" >&2; exit 2; }
# How many lines before a make error line are printed with it.
context=25

awk -v context="${context}" '
  { line = $0; sub(/^\[ *[0-9]+:[0-9][0-9]\] /, "", line) }
  line ~ /^=== what failed/ { inblock = 1 }
  inblock { blocks = blocks $0 "\n" }
  line ~ /^=== end of what failed/ { inblock = 0 }
  # make prints an error line per make level; the lines before the first are the end of the stage.
  line ~ /^make(\[[0-9]+\])?: \*\*\* / {
    if (NR != last_error + 1) {
      errors = errors "--- the lines before " line "\n"
      for (i = (NR > context ? NR - context : 1); i < NR; i++) errors = errors last[i % context] "\n"
    }
    errors = errors $0 "\n"
    last_error = NR
  }
  { last[NR % context] = $0 }
  END {
    if (blocks == "" && errors == "") exit
    printf "=== what failed, again (hack/what-failed.sh):\n%s%s", blocks, errors
  }
' "${log}"

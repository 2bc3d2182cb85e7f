#!/usr/bin/env bash
# make bench: the headless-resync benchmark (test/bench) on the stock and patched builds, then
# docs/benchmarks.md and its chart from the results. BENCH_* variables narrow it (see
# test/bench/headless_bench_test.go); the page quotes them.
set -o errexit -o nounset -o pipefail
cd "$(dirname "$0")/.."

results=${BENCH_RESULTS:-$PWD/_output/bench}
rm -rf "$results"
mkdir -p "$results"
export BENCH_RESULTS=$results

command="make bench"
for name in BENCH_SERVICES BENCH_RATES BENCH_VARIANTS BENCH_DELETIONS BENCH_SCHEDULER_HANDOVERS; do
  if [ -n "${!name:-}" ]; then
    command="$name=${!name} $command"
  fi
done

status=0
go test -run '^$' -bench 'HeadlessResync|SchedulerHandover' -benchtime 1x -timeout 4h -v ./test/bench/ 2>&1 |
  tee "$results/bench.log" || status=$?

# The harness stops what it starts; a benchmark killed by its timeout cannot, so look.
leftovers=$(pgrep -f "$PWD/_output/bin/" || true)
if [ -n "$leftovers" ]; then
  echo "bench: stopping processes left running: $(echo "$leftovers" | tr '\n' ' ')" >&2
  # shellcheck disable=SC2086 # one PID per word
  kill $leftovers || true
fi
if [ "$status" -ne 0 ]; then
  echo "bench: the benchmark failed (log: $results/bench.log); docs/benchmarks.md is unchanged" >&2
  exit "$status"
fi
go run ./test/bench/cmd/bench-report -results "$results" -command "$command"

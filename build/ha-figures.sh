#!/usr/bin/env bash
# Runs the HA fault suite (test/regression/ha) on stock and on the build under test, waiting up
# to HA_RECOVERY_BOUND (default 5m) for a recovery that does not come, and writes one table of the
# figures each scenario logged. Stock fails the suite's checks by design; its figures are the point.
# Output: _output/ha-figures/<variant>.tsv and their logs; docs/ha-figures.tsv and docs/ha.md's table.
set -o errexit -o nounset -o pipefail
. "$(dirname "$0")/lib.sh"

out="${OUTPUT_DIR}/ha-figures"
rm -rf "${out}"
mkdir -p "${out}"
export HA_RECOVERY_BOUND=${HA_RECOVERY_BOUND:-5m}
for variant in stock "${VARIANT_UNDER_TEST:-patched}"; do
  log "HA fault suite on ${variant} (bound ${HA_RECOVERY_BOUND}; log: ${out}/${variant}.log)"
  (cd "${REPO_ROOT}" && VARIANT_UNDER_TEST="${variant}" go test -count=1 -v -timeout 60m ./test/regression/ha/) \
    > "${out}/${variant}.log" 2>&1 || log "${variant}: the suite failed (expected for stock); see ${out}/${variant}.log"
  cat "${OUTPUT_DIR}"/test-logs/Test*/figures.txt 2>/dev/null | grep -P "\t${variant}\t" > "${out}/${variant}.tsv" ||
    die "${variant}: no figures; see ${out}/${variant}.log"
done

# The figures lines, one scenario after another (the build under test first), become
# docs/ha-figures.tsv; docs/ha.md's table is rendered from it (make lint checks the copy).
LC_ALL=C sort -t $'\t' -k1,1 -s "${out}/${VARIANT_UNDER_TEST:-patched}.tsv" "${out}/stock.tsv" > "${REPO_ROOT}/docs/ha-figures.tsv"
(cd "${REPO_ROOT}" && go run ./build/cmd/figures write-ha) || die "cannot render docs/ha-figures.tsv into docs/ha.md"
log "wrote docs/ha-figures.tsv and docs/ha.md's table; review the prose around it, then commit both"

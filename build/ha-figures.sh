#!/usr/bin/env bash
# Runs the HA fault suite (test/regression/ha) on stock and on the build under test, waiting up
# to HA_RECOVERY_BOUND (default 5m) for a recovery that does not come, and prints one table of the
# figures each scenario logged. Stock fails the suite's checks by design; its figures are the point.
# Output: _output/ha-figures/<variant>.tsv and the table on stdout.
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

echo "| scenario | build | recovery | leaders | live Endpoints lost | dual writes | more |"
echo "|---|---|---|---|---|---|---|"
sort -t $'\t' -k1,1 -s "${out}"/*.tsv | awk -F '\t' '{
  more = ""
  for (i = 7; i <= NF; i++) more = more (more == "" ? "" : "; ") $i
  printf "| %s | %s | %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5, $6, more
}' | sed -e 's/| recovery /| /' -e 's/| leaders /| /' -e 's/| live Endpoints lost /| /' -e 's/| dual writes /| /'

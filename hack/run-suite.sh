#!/usr/bin/env bash
# Runs tests of one of our regression suites as make test-regression does (prerequisites required,
# no cached result, make's timeout), against a build of your choice:
#   hack/run-suite.sh SUITE TEST_REGEX [VARIANT]
#   e.g. hack/run-suite.sh headless '^TestPatchedLeavesUnchangedEndpointsAlone$' without-0004
# VARIANT is patched (default), stock, or without-NNNN after build/patch.sh --without and build/build.sh.
set -o errexit -o nounset -o pipefail
cd "$(dirname "$0")/.."

if [ $# -lt 2 ] || [ $# -gt 3 ]; then
  echo "usage: $0 SUITE TEST_REGEX [VARIANT]" >&2
  exit 2
fi
suite=$1 test=$2 variant=${3:-patched}
if [ ! -d "test/regression/${suite}" ]; then
  echo "error: no suite test/regression/${suite}; the suites: $(find test/regression -mindepth 1 -maxdepth 1 -type d -printf '%f ')" >&2
  exit 2
fi
IDC_REQUIRE_PREREQUISITES=1 VARIANT_UNDER_TEST="${variant}" \
  exec go test -count=1 -timeout 40m -v -run "${test}" "./test/regression/${suite}/"

#!/usr/bin/env bash
# Prints the release version derived from VERSION (e.g. v1.17.3-idc.1).
set -o errexit -o nounset -o pipefail
. "$(dirname "$0")/lib.sh"
echo "${RELEASE_VERSION}"

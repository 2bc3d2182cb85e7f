#!/usr/bin/env bash
# Prints RELEASE_NOTES.md for the release, made from the patches' own headers (build/patchmeta).
set -o errexit -o nounset -o pipefail
. "$(dirname "$0")/lib.sh"
need_patchmeta

"${PATCHMETA}" notes -series "${SERIES_FILE}" -version "${RELEASE_VERSION}" -upstream "${UPSTREAM_VERSION}" \
  -go "${GO_TOOLCHAIN}" -commit "$(tree_git rev-parse "patched^{commit}")"

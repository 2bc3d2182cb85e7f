#!/usr/bin/env bash
# Checks the hand-written docs against the repository: every release version they name is the one
# VERSION makes, and every relative link points at a file that exists.
set -o errexit -o nounset -o pipefail
. "$(dirname "$0")/lib.sh"

docs=(README.md docs/operations.md docs/development.md docs/ha.md)
problems=()
cd "${REPO_ROOT}"
for doc in "${docs[@]}"; do
  while read -r version; do
    [ "${version}" = "${RELEASE_VERSION}" ] ||
      problems+=("${doc}: names release ${version}, but VERSION makes ${RELEASE_VERSION}")
  done < <(grep -oE 'v[0-9]+\.[0-9]+\.[0-9]+-idc\.[0-9]+' "${doc}" | sort -u)
  while read -r target; do
    target=${target%%#*}
    [ -z "${target}" ] || [ -e "$(dirname "${doc}")/${target}" ] ||
      problems+=("${doc}: links to ${target}, which does not exist")
  done < <(grep -oE '\]\([^)[:space:]]+\)' "${doc}" | sed -e 's/^](//' -e 's/)$//' | grep -vE '^[a-z]+://' | sort -u)
done
[ ${#problems[@]} -eq 0 ] || die "$(printf '%s\n' "${problems[@]}")"
log "verify-docs: ${#docs[@]} docs name ${RELEASE_VERSION} only, and their links resolve"

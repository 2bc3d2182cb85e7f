#!/usr/bin/env bash
# Commits the changes in the upstream tree as a new patch at the end of the series and refreshes
# patches/. The message file holds the subject, the body and the provenance fields; see
# hack/patch-message.template.
set -o errexit -o nounset -o pipefail
. "$(dirname "$0")/../build/lib.sh"

[ $# -eq 1 ] || die "usage: $0 MESSAGE_FILE   (start from hack/patch-message.template)"
message=$1
[ -f "${message}" ] || die "no message file ${message}"
[ "$(tree_git rev-parse --abbrev-ref HEAD)" = patched ] || die "${TREE_DIR} is not on branch patched; run 'make patch' first"
[ -n "$(tree_git status --porcelain)" ] || die "nothing to commit in ${TREE_DIR}"

probe=$(mktemp)
trap 'rm -f "${probe}"' EXIT
{ cat "${message}"; echo "---"; } > "${probe}"
problems=$(patch_header_problems "${probe}" | sed "s|^$(basename "${probe}")|${message}|")
[ -z "${problems}" ] || die "$(printf 'message header incomplete:\n%s' "${problems}")"

tree_git add -A
tree_git commit -q --cleanup=strip -F "$(cd "$(dirname "${message}")" && pwd)/$(basename "${message}")"
"$(dirname "$0")/refresh-patches.sh"

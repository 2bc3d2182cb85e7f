#!/usr/bin/env bash
# Reconstructs pristine upstream v1.17.3 from the Go module proxy as a git repository whose first
# commit (tag "upstream") is exactly the pinned, hash-verified sources.
set -o errexit -o nounset -o pipefail
. "$(dirname "$0")/lib.sh"

if [ -d "${TREE_DIR}/.git" ] && tree_git rev-parse -q --verify refs/tags/upstream >/dev/null; then
  log "upstream tree already at ${TREE_DIR} ($(tree_git rev-parse --short upstream))"
  exit 0
fi
[ -e "${TREE_DIR}" ] && die "${TREE_DIR} exists but has no upstream commit; remove it and run again"

mkdir -p "$(dirname "${TREE_DIR}")"
staging="${TREE_DIR}.partial"
rm -rf "${staging}"
log "fetching and verifying pinned modules (build/upstream.sum)"
(cd "${REPO_ROOT}" && go run ./build/cmd/upstream-source -pins build/upstream.sum -dest "${staging}")

TREE_DIR="${staging}"
tree_git init -q -b patched
tree_git add --all --force  # the zip is the truth, whatever upstream .gitignore says
GIT_AUTHOR_DATE="${UPSTREAM_DATE}" GIT_COMMITTER_DATE="${UPSTREAM_DATE}" \
  tree_git commit -q -m "upstream: k8s.io/kubernetes ${UPSTREAM_VERSION}" \
  -m "Pristine sources from the Go module proxy, hashes pinned in build/upstream.sum."
tree_git tag upstream
TREE_DIR="${staging%.partial}"
mv "${staging}" "${TREE_DIR}"
log "upstream tree at ${TREE_DIR}: commit $(tree_git rev-parse upstream)"

#!/usr/bin/env bash
# Builds what a release ships (the patched components and the node's binaries) a second time, from another worktree path and with an empty Go
# build cache, and requires byte-identical binaries.
set -o errexit -o nounset -o pipefail
. "$(dirname "$0")/lib.sh"

first=$(bin_dir patched)
second_output="${OUTPUT_DIR}/reproducible"
second=$(OUTPUT_DIR="${second_output}" bin_dir patched)
rm -rf "${second_output}"
"$(dirname "$0")/build.sh" patched
log "second build: other path, empty build cache"
GOCACHE="${second_output}/gocache" OUTPUT_DIR="${second_output}" TREE_DIR="${TREE_DIR}" \
  "$(dirname "$0")/build.sh" patched

status=0
for binary in "${SHIPPED_COMMANDS[@]}"; do
  a=$(sha256sum < "${first}/${binary}" | cut -d' ' -f1)
  b=$(sha256sum < "${second}/${binary}" | cut -d' ' -f1)
  if [ "${a}" = "${b}" ]; then
    log "${binary}: ${a} (identical)"
  else
    echo "verify-reproducible: ${binary} differs: ${a} vs ${b}" >&2
    status=1
  fi
done
tree_git worktree remove --force "${second_output}/work/patched" 2>/dev/null || true

rm -rf "${second_output}"
exit "${status}"

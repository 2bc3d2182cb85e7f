#!/usr/bin/env bash
# Applies patches/series on top of the pristine upstream commit with git am. Branch "patched"
# ends up at the whole series and tag "stock" at the last build fix. Commits carry the pipeline's
# committer and the patch's own dates, so their hashes are the same on every machine.
set -o errexit -o nounset -o pipefail
. "$(dirname "$0")/lib.sh"

[ -d "${TREE_DIR}/.git" ] || die "no upstream tree at ${TREE_DIR}; run 'make source' first"
[ -f "${SERIES_FILE}" ] || die "no series file ${SERIES_FILE}"

# Refuse to throw away work someone left in the tree.
if [ -n "$(tree_git status --porcelain --untracked-files=no)" ]; then
  die "${TREE_DIR} has uncommitted changes; commit them and run hack/refresh-patches.sh, or discard them"
fi

tree_git am --abort >/dev/null 2>&1 || true
tree_git checkout -q --detach upstream
stock=$(tree_git rev-parse upstream)
in_build_prefix=true
while read -r name; do
  patch="${PATCHES_DIR}/${name}"
  [ -f "${patch}" ] || die "patches/series lists ${name}, but ${patch} does not exist"
  category=$(patch_field "${patch}" Category)
  if [ "${category}" = build ]; then
    ${in_build_prefix} || die "${name} is a build fix listed after a non-build patch; build fixes come first in patches/series"
  else
    in_build_prefix=false
  fi
  if ! output=$(tree_git am --quiet --committer-date-is-author-date --keep-cr "${patch}" 2>&1); then
    tree_git am --abort >/dev/null 2>&1 || true
    tree_git checkout -q patched 2>/dev/null || tree_git checkout -q --detach upstream
    failing=$(printf '%s\n' "${output}" | sed -n 's/^error: \(patch failed: \|\)\([^:]*\):.*/\2/p' | sort -u | paste -sd' ' -)
    printf '%s\n' "${output}" >&2
    die "patch ${name} does not apply${failing:+ (failing: ${failing})}; branch patched and tag stock are unchanged"
  fi
  ${in_build_prefix} && stock=$(tree_git rev-parse HEAD)
done < <(series_patches)

tree_git tag -f stock "${stock}" >/dev/null
tree_git checkout -q -B patched
log "stock   = $(tree_git rev-parse stock)"
log "patched = $(tree_git rev-parse patched) ($(series_patches | wc -l) patches)"

#!/usr/bin/env bash
# Applies patches/series on top of the pristine upstream commit with git am. Branch "patched"
# ends up at the whole series and tag "stock" at the last build fix. Commits carry the pipeline's
# committer and the patch's own dates, so their hashes are the same on every machine.
#
# With --without PATCH the series minus that patch goes to branch "without-NNNN" (NNNN: the patch's
# number) instead, for proving that a regression test fails when its patch is gone. A patch whose
# header says "Requires: NNNN" (it cannot apply or build without patch NNNN: lines or an API that patch brings)
# is left out with NNNN, and so on down the chain.
# Each commit that upstream plus the series' first patches make is recorded under
# refs/pipeline/prefix/<key>, the key a hash of the upstream commit and those patch files'
# contents; a series without a patch starts from the longest recorded prefix before that patch
# instead of applying it again (verify-patches and prove-patches make one such series per proof).
set -o errexit -o nounset -o pipefail
. "$(dirname "$0")/lib.sh"
need_patchmeta

without=""
if [ $# -gt 0 ]; then
  if [ $# -ne 2 ] || [ "$1" != --without ]; then
    die "usage: $0 [--without PATCH_FILE_NAME]"
  fi
  without=$(basename "$2")
  series_patches | grep -qxF "${without}" || die "${without} is not in patches/series"
fi
result_branch=patched
[ -z "${without}" ] || result_branch="without-${without%%-*}"

[ -d "${TREE_DIR}/.git" ] || die "no upstream tree at ${TREE_DIR}; run 'make source' first"
[ -f "${SERIES_FILE}" ] || die "no series file ${SERIES_FILE}"

# Refuse to throw away work someone left in the tree.
if [ -n "$(tree_git status --porcelain --untracked-files=no)" ]; then
  die "${TREE_DIR} has uncommitted changes; commit them and run hack/refresh-patches.sh, or discard them"
fi

# Nor commits on branch patched that never made it into patches/ (refs/pipeline/applied marks
# what this script or hack/refresh-patches.sh last left there).
if [ "${result_branch}" = patched ] && tree_git rev-parse -q --verify refs/heads/patched >/dev/null &&
   tree_git rev-parse -q --verify refs/pipeline/applied >/dev/null &&
   [ "$(tree_git rev-parse patched)" != "$(tree_git rev-parse refs/pipeline/applied)" ]; then
  die "branch patched in ${TREE_DIR} has commits that are not in patches/; run hack/refresh-patches.sh first"
fi

# prefix_key KEY PATCH: the key of the prefix KEY extended by PATCH.
prefix_key() { printf '%s %s\n' "$1" "$(tree_git hash-object --no-filters "$2")" | sha256sum | cut -c1-40; }

# One patch.sh at a time on the tree (make test's lanes: prove-patches' --without runs beside the
# release that test-publish and test-e2e cut): the next one waits for the lock.
exec 9>"${TREE_DIR}/.git/idc-patch.lock"
flock 9
tree_git am --abort >/dev/null 2>&1 || true
# Without a patch: the longest recorded prefix before it (none when patches or upstream changed).
start=upstream
reuse=0
if [ -n "${without}" ]; then
  key=$(tree_git rev-parse upstream)
  count=0
  while read -r name; do
    [ "${name}" != "${without}" ] || break
    key=$(prefix_key "${key}" "${PATCHES_DIR}/${name}")
    count=$((count + 1))
    if commit=$(tree_git rev-parse -q --verify "refs/pipeline/prefix/${key}^{commit}"); then
      start=${commit}
      reuse=${count}
    fi
  done < <(series_patches)
fi
tree_git checkout -q --detach "${start}"
stock=$(tree_git rev-parse upstream)
key=$(tree_git rev-parse upstream)
keys=()
position=0
in_build_prefix=true
seen=" "
left_out=" ${without%%-*} "
applied=0
while read -r name; do
  patch="${PATCHES_DIR}/${name}"
  [ -f "${patch}" ] || die "patches/series lists ${name}, but ${patch} does not exist"
  seen="${seen}${name%%-*} "
  position=$((position + 1))
  [ "${name}" != "${without}" ] || continue
  skip=false
  for required in $(patch_field_all "${patch}" Requires); do
    if [[ "${seen}" != *" ${required} "* ]] || [ "${required}" = "${name%%-*}" ]; then
      die "${name}: Requires: ${required} is not a patch listed before it in patches/series"
    fi
    if [[ "${left_out}" == *" ${required} "* ]]; then
      log "${result_branch}: leaving out ${name} too (Requires: ${required})"
      left_out="${left_out}${name%%-*} "
      skip=true
    fi
  done
  ${skip} && continue
  category=$(patch_field "${patch}" Category)
  if [ "${category}" = build ]; then
    ${in_build_prefix} || die "${name} is a build fix listed after a non-build patch; build fixes come first in patches/series"
  else
    in_build_prefix=false
  fi
  if [ "${position}" -le "${reuse}" ]; then
    # In the recorded prefix the tree starts from.
    applied=$((applied + 1))
    continue
  fi
  if ! output=$(tree_git am --quiet --committer-date-is-author-date --keep-cr "${patch}" 2>&1); then
    tree_git am --abort >/dev/null 2>&1 || true
    tree_git checkout -q "${result_branch}" 2>/dev/null || tree_git checkout -q --detach upstream
    failing=$(printf '%s\n' "${output}" | sed -n 's/^error: \(patch failed: \|\)\([^:]*\):.*/\2/p' | sort -u | paste -sd' ' -)
    printf '%s\n' "${output}" >&2
    hint=""
    [ -z "${without}" ] || hint=" (if ${name} applies only on top of ${without}, its header needs 'Requires: ${without%%-*}')"
    die "patch ${name} does not apply${failing:+ (failing: ${failing})}${hint}; branch ${result_branch} and tag stock are unchanged"
  fi
  applied=$((applied + 1))
  ${in_build_prefix} && stock=$(tree_git rev-parse HEAD)
  if [ -z "${without}" ]; then
    key=$(prefix_key "${key}" "${patch}")
    keys+=("refs/pipeline/prefix/${key}")
    tree_git update-ref "refs/pipeline/prefix/${key}" HEAD
  fi
done < <(series_patches)
if [ -z "${without}" ]; then
  # Forget the prefixes of series that are gone.
  tree_git for-each-ref --format='%(refname)' refs/pipeline/prefix/ | { grep -vxF -f <(printf '%s\n' "${keys[@]}") || true; } |
    while read -r ref; do tree_git update-ref -d "${ref}"; done
fi

if [ -z "${without}" ]; then
  tree_git tag -f stock "${stock}" >/dev/null
  log "stock   = $(tree_git rev-parse stock)"
fi
tree_git checkout -q -B "${result_branch}"
if [ "${result_branch}" = patched ]; then
  tree_git update-ref refs/pipeline/applied HEAD
else
  # Leave the tree where developers work: on branch patched.
  tree_git checkout -q patched 2>/dev/null || true
fi
log "${result_branch} = $(tree_git rev-parse "${result_branch}") (${applied} patches)"

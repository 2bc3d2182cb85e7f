#!/usr/bin/env bash
# Checks the patch series without touching the upstream tree: every patch is listed once and
# listed patches exist, headers carry the provenance fields, patches/UPSTREAM.md decides every
# upstream 1.17 changelog entry after our base, the series applies on pristine upstream (build
# fixes first), git format-patch of the result reproduces patches/ byte for byte, and the series
# without each patch that prove-patches proves applies.
set -o errexit -o nounset -o pipefail
. "$(dirname "$0")/lib.sh"
need_patchmeta

problems=()
# Prints every problem found so far and fails, if there is any.
stop_on_problems() {
  [ ${#problems[@]} -eq 0 ] && return
  printf 'verify-patches: %s\n' "${problems[@]}" >&2
  exit 1
}
duplicates=$(series_patches | sort | uniq -d)
[ -z "${duplicates}" ] || problems+=("listed twice in patches/series: ${duplicates//$'\n'/ }")
for patch in "${PATCHES_DIR}"/*.patch; do
  [ -e "${patch}" ] || continue
  series_patches | grep -qxF "$(basename "${patch}")" || problems+=("$(basename "${patch}") is not listed in patches/series")
  # A binary in a patch is a build output committed by mistake (go build in the tree's root).
  if grep -q '^GIT binary patch$' "${patch}"; then
    problems+=("$(basename "${patch}") carries a binary file ($(grep -B3 '^GIT binary patch$' "${patch}" | sed -n 's|^diff --git a/\([^ ]*\) .*|\1|p' | tr '\n' ' ')): remove it from the commit in the tree and run hack/refresh-patches.sh")
  fi
done
listed=()
while read -r name; do
  if [ -f "${PATCHES_DIR}/${name}" ]; then
    listed+=("${PATCHES_DIR}/${name}")
  else
    problems+=("patches/series lists ${name}, which does not exist")
  fi
done < <(series_patches)
while IFS= read -r problem; do
  [ -z "${problem}" ] || problems+=("${problem}")
done < <(patch_header_problems "${listed[@]}")
stop_on_problems

log "verify-patches: upstream changelog triage (patches/UPSTREAM.md)"
(cd "${REPO_ROOT}" && go run ./build/cmd/verify-upstream -series "${SERIES_FILE}")

[ -d "${TREE_DIR}/.git" ] || die "no upstream tree at ${TREE_DIR}; run 'make source' first"
scratch=$(mktemp -d "${OUTPUT_DIR}/verify-patches.XXXXXX")
trap 'rm -rf "${scratch}"' EXIT
git clone -q --shared --no-checkout "${TREE_DIR}" "${scratch}/tree"
export TREE_DIR="${scratch}/tree"
tree_git checkout -q --detach upstream
"$(dirname "$0")/patch.sh"

mkdir "${scratch}/regenerated"
format_series patched "${scratch}/regenerated"
regenerated=$(find "${scratch}/regenerated" -name '*.patch' | wc -l)
[ "${regenerated}" -eq "$(series_patches | wc -l)" ] ||
  die "the applied series regenerates ${regenerated} patches, patches/series lists $(series_patches | wc -l)"
stale=0
for patch in "${scratch}/regenerated"/*.patch; do
  name=$(basename "${patch}")
  if ! cmp -s "${patch}" "${PATCHES_DIR}/${name}"; then
    echo "verify-patches: ${name} differs from what git format-patch makes of the applied series:" >&2
    diff -u "${PATCHES_DIR}/${name}" "${patch}" 2>&1 | head -20 >&2 || true
    stale=1
  fi
done
[ "${stale}" = 0 ] || die "patches were edited by hand or are stale: apply them (make patch), fix the commits, run hack/refresh-patches.sh"

# prove-patches builds the series without each patch that has a regression test, at the end of CI.
# Check here, in seconds, that each of those series applies (a patch that applies only on top of
# another needs "Requires: NNNN") and takes the left-out patch's test files.
proofs=0
while read -r name; do
  patch="${PATCHES_DIR}/${name}"
  has_regression_proof "${patch}" || continue
  proofs=$((proofs + 1))
  if ! output=$("$(dirname "$0")/patch.sh" --without "${name}" 2>&1); then
    problems+=("the series without ${name} does not apply: $(printf '%s\n' "${output}" | grep '^error: ' | tail -n 1 | sed 's/^error: //')")
    continue
  fi
  if [ -n "$(patch_field "${patch}" Regression-Unit-Test)" ]; then
    GIT_INDEX_FILE="${scratch}/index" tree_git read-tree "without-${name%%-*}"
    GIT_INDEX_FILE="${scratch}/index" tree_git apply --cached --check --include='*_test.go' "${patch}" 2>/dev/null ||
      problems+=("${name}: its test files do not apply to the series without it, so prove-patches cannot run its Regression-Unit-Test")
  fi
done < <(series_patches)
stop_on_problems
log "verify-patches: $(series_patches | wc -l) patches apply cleanly and regenerate byte for byte; the series without each of the ${proofs} proven patches applies"

#!/usr/bin/env bash
# Checks the docs against the repository: every release version they name is the one
# VERSION makes, every relative link points at a file that exists, every repository path they name
# in backticks exists and every `make TARGET` is a target of the Makefile, and the upgrade procedure
# an operator pastes from docs/operations.md (the block between a line "   (" and a line "   )")
# parses and passes shellcheck.
#   build/verify-docs.sh [DOC...]   (default: every Markdown file git tracks)
set -o errexit -o nounset -o pipefail
. "$(dirname "$0")/lib.sh"

# heading_anchors DOC: the anchor GitHub gives each heading of DOC outside fenced code blocks
# (lower case, a link reduced to its text, punctuation dropped, spaces to hyphens).
heading_anchors() {
  awk '/^ *```/ { fenced = !fenced; next } !fenced && /^#+ / { sub(/^#+ +/, ""); print }' "$1" |
    tr '[:upper:]' '[:lower:]' | sed -E 's/\[([^]]*)\]\([^)]*\)/\1/g; s/[^a-z0-9 _-]//g; s/ /-/g'
}

# Every Markdown file of the repository; a path of the upstream tree is written as its Go package
# (k8s.io/kubernetes/pkg/...) or without backquotes, since this one is not there.
mapfile -t docs < <(git -C "${REPO_ROOT}" ls-files '*.md')
[ $# -eq 0 ] || docs=("$@")
problems=()
cd "${REPO_ROOT}"
for doc in "${docs[@]}"; do
  [ -f "${doc}" ] || die "no doc ${doc}"
  # Repository paths in backticks (test/integration/... is upstream's tree, not ours).
  # shellcheck disable=SC2016 # backticks in a regular expression, not a command substitution
  while read -r path; do
    case "${path}" in test/integration*) continue ;; esac
    [ -e "${path}" ] || problems+=("${doc}: names ${path}, which does not exist")
  done < <(grep -oE '`[^`]+`' "${doc}" | tr -d '`' |
    grep -E '^(build|cmd|deploy|pkg|test|docs|hack|patches|monitoring|images|\.ci)/[A-Za-z0-9_./-]*$' | sort -u || true)
  # shellcheck disable=SC2016
  while read -r target; do
    grep -qE "^${target}:" Makefile || problems+=("${doc}: names make ${target}, which the Makefile does not have")
  done < <(grep -oE '`make [a-z0-9-]+' "${doc}" | sed 's/^`make //' | sort -u || true)
  while read -r version; do
    [ "${version}" = "${RELEASE_VERSION}" ] ||
      problems+=("${doc}: names release ${version}, but VERSION makes ${RELEASE_VERSION}")
  done < <(grep -oE 'v[0-9]+\.[0-9]+\.[0-9]+-idc\.[0-9]+' "${doc}" | sort -u)
  while read -r link; do
    target=${link%%#*}
    file=${doc}
    [ -z "${target}" ] || file=$(dirname "${doc}")/${target}
    if [ ! -e "${file}" ]; then
      problems+=("${doc}: links to ${target}, which does not exist")
    elif [[ ${link} == *#* && ${file} == *.md ]]; then
      heading_anchors "${file}" | grep -qxF "${link#*#}" ||
        problems+=("${doc}: links to ${link}, but ${file} has no heading that makes #${link#*#}")
    fi
  done < <(grep -oE '\]\([^)[:space:]]+\)' "${doc}" | sed -e 's/^](//' -e 's/)$//' | grep -vE '^[a-z]+://' | sort -u)
  # The toolchain a doc says we build with is VERSION's.
  while read -r toolchain; do
    [ "${toolchain}" = "${GO_TOOLCHAIN}" ] ||
      problems+=("${doc}: says we build with ${toolchain}, but VERSION's GO_TOOLCHAIN is ${GO_TOOLCHAIN}")
  done < <(grep -oE '(GOTOOLCHAIN=go|is built with Go |our Go )[0-9]+\.[0-9]+(\.[0-9]+)?' "${doc}" | sed -E 's/.*(go|Go )/go/' | sort -u)
done
[ $# -eq 0 ] || { [ ${#problems[@]} -eq 0 ] || die "$(printf '%s\n' "${problems[@]}")"; log "verify-docs: $* hold"; exit 0; }
# The figures the docs quote are their sources' (build/cmd/figures): docs/benchmarks.md's summary
# is what its tables say, the README's headline is that summary, docs/ha.md's table is
# docs/ha-figures.tsv rendered, the README counts the stock baseline's upstream integration tests.
figures_tool="${OUTPUT_DIR}/tools/figures"
(cd "${REPO_ROOT}" && go build -trimpath -o "${figures_tool}" ./build/cmd/figures) || die "cannot build build/cmd/figures"
if ! findings=$("${figures_tool}" check -root "${REPO_ROOT}" 2>&1); then
  mapfile -t figure_problems <<<"${findings}"
  problems+=("${figure_problems[@]}")
fi
# The README's patch table is generated from the headers (hack/refresh-patches.sh).
need_patchmeta
table=$(awk '/^<!-- \/patches -->/ { inside = 0 } inside { print } /^<!-- patches:/ { inside = 1 }' README.md)
if ! generated=$("${PATCHMETA}" readme -series "${REPO_ROOT}/patches/series"); then
  problems+=("README.md: cannot generate its patch table from patches/series")
elif [ "${table}" != "${generated%$'\n'}" ]; then
  rows=$(diff <(printf '%s\n' "${table}") <(printf '%s\n' "${generated%$'\n'}") | grep '^[<>]' | cut -c1-90 | head -4 | tr '\n' ' ' || true)
  problems+=("README.md: its patch table is not the series' headers (README < > headers: ${rows}); run hack/refresh-patches.sh")
fi
# The blocks an operator pastes from docs/operations.md (each from a line "   (" to a line "   )"),
# each on its own: they run one at a time.
blocks=$(mktemp -d)
trap 'rm -rf "${blocks}"' EXIT
awk -v dir="${blocks}" '/^   \($/ { n++; inside = 1 } inside { line = $0; sub(/^   /, "", line); print line > (dir "/" n ".sh") } /^   \)$/ { inside = 0 }' docs/operations.md
count=0
for block in "${blocks}"/*.sh; do
  [ -e "${block}" ] || continue
  count=$((count + 1))
  if ! findings=$(bash -n "${block}" 2>&1 && shellcheck -s bash "${block}" 2>&1); then
    problems+=("docs/operations.md: block $(basename "${block}" .sh) (\"$(sed -n 3p "${block}" | cut -c1-60)...\") does not pass bash -n and shellcheck: ${findings}")
  fi
done
[ "${count}" -gt 0 ] || problems+=("docs/operations.md: no block to paste (a line \"   (\" to a line \"   )\")")
[ ${#problems[@]} -eq 0 ] || die "$(printf '%s\n' "${problems[@]}")"
log "verify-docs: ${#docs[@]} docs name ${RELEASE_VERSION} only, their links, paths and make targets resolve, the figures they quote are their sources', the README's patch table is current, operations.md's ${count} blocks pass shellcheck"

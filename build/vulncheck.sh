#!/usr/bin/env bash
# Scans what we ship with govulncheck (GOVULNCHECK_VERSION in VERSION) against the Go vulnerability
# database (the public one, or VULNDB: a URL, a directory or a zip of it) and holds every finding
# to patches/SECURITY.md: each OSV id that govulncheck reports has a row there explaining it.
#   build/vulncheck.sh
#     make vulncheck: the patched binaries make build (and make binaries) made (SHIPPED_COMMANDS:
#     the components and the kubelet), cpswap for each of ARCHS, and this repository's modules in
#     source mode; stock's builds of the same binaries as the baseline.
#     Also fails on a row that no scan reports any more (a stale explanation), and on a figure of
#     the scan in README.md or SECURITY.md that this scan contradicts (figures stated for another
#     database date are not compared). Results, JSON and a report per target, in _output/vulncheck/
#     (VULNCHECK_DIR).
#   build/vulncheck.sh --release DIR
#     every binary of a release being cut (DIR/bin/linux-<arch>/*): govulncheck's JSON and our
#     report per binary into DIR/vulncheck/linux-<arch>/, which SHA256SUMS then lists.
set -o errexit -o nounset -o pipefail
. "$(dirname "$0")/lib.sh"

release=""
if [ "${1:-}" = --release ]; then
  { [ $# -eq 2 ] && [ -d "$2/bin" ]; } || die "usage: $0 --release RELEASE_DIR (a directory with bin/linux-<arch>/)"
  release=$2
elif [ $# -gt 0 ]; then
  die "usage: $0 [--release RELEASE_DIR]"
fi

govulncheck=$(govulncheck_path)
db=$(vulndb_url)
offline_hint=""
[ -n "${VULNDB:-}" ] || offline_hint=" (offline? set VULNDB to a copy of the database: a directory or a zip)"
# This repository's own modules, scanned in source mode by make vulncheck: target -> directory.
declare -A scan_source=([source/repository]="${REPO_ROOT}" [source/images-builder]="${REPO_ROOT}/images/builder")
checker="${OUTPUT_DIR}/tools/vulncheck"
(cd "${REPO_ROOT}" && go build -trimpath -o "${checker}" ./build/cmd/vulncheck) || die "cannot build build/cmd/vulncheck"

# scan TARGET JSON [BINARY]: govulncheck on BINARY (binary mode) or on the module in directory
# TARGET's source (source mode: scan_source) into JSON. With -format json govulncheck exits 0
# whatever it finds; a non-zero exit is a failed scan.
scan() {
  local target=$1 json=$2 binary=${3:-} err
  mkdir -p "$(dirname "${json}")"
  err="${json%.json}.stderr"
  if [ -n "${binary}" ]; then
    "${govulncheck}" -db "${db}" -mode binary -format json "${binary}" > "${json}" 2> "${err}" ||
      die "govulncheck could not scan ${binary} with the database ${db}: $(tail -n 3 "${err}")${offline_hint}"
  else
    "${govulncheck}" -db "${db}" -C "${scan_source[${target}]}" -format json ./... > "${json}" 2> "${err}" ||
      die "govulncheck could not scan the module in ${scan_source[${target}]} with the database ${db}: $(tail -n 3 "${err}")${offline_hint}"
  fi
  rm -f "${err}"
}

ours=() baselines=() pids=()
# A scan still running when this script stops (a failure elsewhere) is stopped with it.
trap 'for pid in "${pids[@]}"; do kill "${pid}" 2>/dev/null || true; done' EXIT
if [ -n "${release}" ]; then
  out="${release}/vulncheck"
  rm -rf "${out}"
  for binary in "${release}"/bin/linux-*/*; do
    target="$(basename "$(dirname "${binary}")")/$(basename "${binary}")"
    scan "${target}" "${out}/${target}.json" "${binary}" &
    pids+=($!)
    ours+=("${target}=${out}/${target}.json=${binary}")
  done
else
  out=${VULNCHECK_DIR:-${OUTPUT_DIR}/vulncheck}
  rm -rf "${out}"
  cpswap_dir="${out}/bin"
  for arch in ${ARCHS}; do
    binaries=()
    for component in "${SHIPPED_COMMANDS[@]}"; do
      binary="$(bin_dir patched "${arch}")/${component}"
      if [ -x "${binary}" ]; then
        binaries+=("${binary}")
      elif [ "${arch}" = "${HOST_ARCH}" ]; then
        die "no ${binary}: run 'make build'"
      else
        log "no ${binary} (make binaries builds it): linux-${arch}'s components are scanned when a release is cut"
      fi
    done
    build_cpswap "${arch}" "${cpswap_dir}/linux-${arch}"
    binaries+=("${cpswap_dir}/linux-${arch}/cpswap")
    for binary in "${binaries[@]}"; do
      target="linux-${arch}/$(basename "${binary}")"
      scan "${target}" "${out}/${target}.json" "${binary}" &
      pids+=($!)
      ours+=("${target}=${out}/${target}.json=${binary}")
    done
  done
  for component in "${SHIPPED_COMMANDS[@]}"; do
    binary="$(bin_dir stock)/${component}"
    [ -x "${binary}" ] || die "no ${binary}: run 'make build'"
    target="stock/linux-${HOST_ARCH}/${component}"
    scan "${target}" "${out}/${target}.json" "${binary}" &
    pids+=($!)
    baselines+=(-baseline "${target}=${out}/${target}.json=${binary}")
  done
  # This repository's own modules, in source mode: what their code calls.
  for target in "${!scan_source[@]}"; do
    scan "${target}" "${out}/${target}.json" &
    pids+=($!)
    ours+=("${target}=${out}/${target}.json")
  done
fi
for pid in "${pids[@]}"; do
  wait "${pid}" || die "a scan failed (above)"
done

# make vulncheck also holds the figures the docs state to the scan, and every row to a finding.
checks=()
[ -n "${release}" ] || checks=(-stale -arch "${HOST_ARCH}" -doc "${REPO_ROOT}/README.md" -doc "${PATCHES_DIR}/SECURITY.md")
# With a copy of the database named (CI's), the docs' figures must be of that copy's date: a
# refreshed copy fails until they are regenerated. The public one moves on; they are compared
# when the dates agree.
[ -n "${release}" ] || [ -z "${VULNDB:-}" ] || checks+=(-figures-of-this-database)
"${checker}" -security "${PATCHES_DIR}/SECURITY.md" "${checks[@]}" -reports "${out}" "${baselines[@]}" "${ours[@]}"
log "govulncheck's JSON and a report per target in ${out}"

#!/usr/bin/env bash
# Installs the machine-level tools the pipeline needs beyond Go (which fetches its own pinned
# toolchain through GOTOOLCHAIN) from Debian's packages, when they are missing.
set -o errexit -o nounset -o pipefail

# command -> Debian package
declare -A packages=(
  [git]=git
  [make]=make
  [sha256sum]=coreutils
  [shellcheck]=shellcheck
  [dpkg-deb]=dpkg
  [docker]=docker.io
  [promtool]=prometheus
  [python3]=python3
)
missing=()
for command in "${!packages[@]}"; do
  command -v "${command}" >/dev/null 2>&1 || missing+=("${packages[${command}]}")
done
command -v go >/dev/null 2>&1 || { echo "error: no go on PATH; install Go 1.21 or newer (GOTOOLCHAIN fetches the pinned one)" >&2; exit 1; }
if [ ${#missing[@]} -gt 0 ]; then
  [ "$(id -u)" = 0 ] || { echo "error: missing ${missing[*]}; install them (apt-get install ${missing[*]})" >&2; exit 1; }
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
fi

#!/usr/bin/env bash
# Installs the machine-level tools the pipeline needs beyond Go (which fetches its own pinned
# toolchain through GOTOOLCHAIN) from Debian's packages, and cosign (the registry test checks our
# signatures with cosign's own CLI) through the Go module proxy, when they are missing.
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
  [docker-registry]=docker-registry
  [skopeo]=skopeo
  [haproxy]=haproxy
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

# cosign, pinned: a cold install takes about 2.5 minutes and 3 GB of module and build cache.
cosign_version=v2.4.1
gobin="$(go env GOPATH)/bin"
if ! "${gobin}/cosign" version 2>/dev/null | grep -q "GitVersion: *${cosign_version}$"; then
  echo "installing cosign ${cosign_version} into ${gobin}"
  GOBIN="${gobin}" GOFLAGS=-trimpath go install -ldflags="-X sigs.k8s.io/release-utils/version.gitVersion=${cosign_version}" \
    "github.com/sigstore/cosign/v2/cmd/cosign@${cosign_version}"
fi

# govulncheck, pinned in VERSION (make vulncheck and make release scan every shipped binary with it).
# shellcheck source=VERSION
GOVULNCHECK_VERSION=$(. "$(dirname "$0")/../VERSION" && echo "${GOVULNCHECK_VERSION}")
if [ "$(go version -m "${gobin}/govulncheck" 2>/dev/null | awk '$1 == "mod" && $2 == "golang.org/x/vuln" {print $3}')" != "${GOVULNCHECK_VERSION}" ]; then
  echo "installing govulncheck ${GOVULNCHECK_VERSION} into ${gobin}"
  GOBIN="${gobin}" GOFLAGS=-trimpath go install "golang.org/x/vuln/cmd/govulncheck@${GOVULNCHECK_VERSION}"
fi

#!/usr/bin/env bash
# Pushes the release in RELEASE_DIR to REGISTRY (build/cmd/publish says how): each component's
# multi-arch index and per-arch images by digest, the SBOM attached to each index, a cosign
# signature of each when SIGNING_KEY names a cosign private key (password in COSIGN_PASSWORD),
# and the version tags last; with the key it also signs the release's SHA256SUMS, which lists every
# file of the release (SHA256SUMS.sig beside it, as cosign sign-blob writes it). Credentials come from the Docker config (DOCKER_CONFIG or
# ~/.docker/config.json).
#   make publish REGISTRY=registry.example.com/k8s [REGISTRY_CA_FILE=ca.pem] [SIGNING_KEY=cosign.key]
#     [REGISTRY_PLAIN_HTTP=1] [FORCE=1]
set -o errexit -o nounset -o pipefail
. "$(dirname "$0")/lib.sh"

[ -d "${RELEASE_DIR}" ] || die "no release in ${RELEASE_DIR}: run 'make release REGISTRY=${REGISTRY}' first"
args=(-release "${RELEASE_DIR}" -registry "${REGISTRY}")
[ -z "${REGISTRY_CA_FILE:-}" ] || args+=(-ca-file "${REGISTRY_CA_FILE}")
[ "${REGISTRY_PLAIN_HTTP:-0}" = 0 ] || args+=(-plain-http)
[ "${FORCE:-0}" = 0 ] || args+=(-force)
[ -z "${SIGNING_KEY:-}" ] || args+=(-signing-key "${SIGNING_KEY}")

publish="${OUTPUT_DIR}/tools/publish"
(cd "${REPO_ROOT}" && go build -trimpath -o "${publish}" ./build/cmd/publish) || die "cannot build build/cmd/publish"
exec "${publish}" "${args[@]}"

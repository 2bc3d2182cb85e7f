#!/usr/bin/env bash
# Cuts a release into RELEASE_DIR (default _output/release/<version>/): binaries (linux amd64 and arm64: the
# components and the node's kubelet), the kubelet's Debian package per architecture (packages/), images (OCI
# layout, OCI tar, docker-archives), kubeadm static-pod manifests naming the images by tag and
# digest, govulncheck's scan of each binary (vulncheck/), cpswap-diagnose.yaml (the RBAC of
# cpswap diagnose), an SPDX SBOM, RELEASE_NOTES.md from the patch headers, and SHA256SUMS of all of it. The directory
# appears only when everything is in it. It takes the images, binaries and stock kubeadm that
# earlier stages made (make release runs them).
#   REGISTRY=registry.example.com/k8s build/release.sh
set -o errexit -o nounset -o pipefail
. "$(dirname "$0")/lib.sh"
need_patchmeta

release="${RELEASE_DIR}"
[ "$(basename "${release}")" = "${RELEASE_VERSION}" ] || die "RELEASE_DIR must end in the version, ${RELEASE_VERSION}: ${release}"
partial="${release}.partial"
images="${OUTPUT_DIR}/images/${RELEASE_VERSION}"
kubeadm="$(bin_dir stock)/kubeadm"
for component in "${COMPONENTS[@]}"; do
  [ -f "${images}/${component}.digest" ] || die "no image of ${component} in ${images}: run 'make release'"
done
[ -x "${kubeadm}" ] || die "no ${kubeadm}: run 'make release'"
rm -rf "${partial}"
mkdir -p "${partial}"/{bin,images,manifests,packages}

binaries=()
for arch in ${ARCHS}; do
  mkdir -p "${partial}/bin/linux-${arch}"
  for command in "${SHIPPED_COMMANDS[@]}"; do
    cp "$(bin_dir patched "${arch}")/${command}" "${partial}/bin/linux-${arch}/"
    binaries+=("${partial}/bin/linux-${arch}/${command}")
  done
  "${REPO_ROOT}/build/deb.sh" patched "${arch}" "${partial}/packages" >/dev/null
done
cp -r "${images}"/. "${partial}/images/"
for arch in ${ARCHS}; do
  build_cpswap "${arch}" "${partial}/bin/linux-${arch}"
done
# What `cpswap diagnose` may read, for the operator to apply before running it.
cp "${REPO_ROOT}/deploy/cpswap-diagnose.yaml" "${partial}/"
# The scan of every binary the release ships, read beside the SBOM; an unexplained finding stops it.
"${REPO_ROOT}/build/vulncheck.sh" --release "${partial}"

log "static-pod manifests from kubeadm ${UPSTREAM_VERSION}"
kubeadm_root=$(mktemp -d)
trap 'rm -rf "${kubeadm_root}"' EXIT
cat > "${kubeadm_root}/kubeadm.yaml" <<EOT
apiVersion: kubeadm.k8s.io/v1beta2
kind: ClusterConfiguration
kubernetesVersion: ${RELEASE_VERSION}
imageRepository: ${REGISTRY}
EOT
"${kubeadm}" init phase control-plane all --config /kubeadm.yaml --rootfs "${kubeadm_root}" >/dev/null 2>&1 ||
  die "kubeadm could not write the control-plane manifests"
# Pinned by digest: a tag can be moved by anyone with push rights, the index digest cannot.
for component in "${COMPONENTS[@]}"; do
  tagged="${REGISTRY}/${component}:${RELEASE_VERSION}"
  pinned="${tagged}@$(cat "${images}/${component}.digest")"
  written="${kubeadm_root}/etc/kubernetes/manifests/${component}.yaml"
  grep -qxF "    image: ${tagged}" "${written}" || die "kubeadm's ${component}.yaml does not name ${tagged}"
  sed "s|^    image: ${tagged}\$|    image: ${pinned}|" "${written}" > "${partial}/manifests/${component}.yaml"
  grep -qxF "    image: ${pinned}" "${partial}/manifests/${component}.yaml" || die "could not pin ${component}.yaml to ${pinned}"
done

epoch=$(tree_git log -1 --format=%ct patched)
sbom="${OUTPUT_DIR}/tools/sbom"
(cd "${REPO_ROOT}" && go build -trimpath -o "${sbom}" ./build/cmd/sbom)
"${sbom}" -release "${RELEASE_VERSION}" -epoch "${epoch}" -lock "${REPO_ROOT}/images/base/packages.lock" \
  "${binaries[@]}" > "${partial}/sbom.spdx.json"
"${sbom}" -check "${partial}/sbom.spdx.json" "${binaries[@]}" >&2
"${PATCHMETA}" notes -series "${SERIES_FILE}" -version "${RELEASE_VERSION}" -upstream "${UPSTREAM_VERSION}" \
  -go "${GO_TOOLCHAIN}" -commit "$(tree_git rev-parse "patched^{commit}")" > "${partial}/RELEASE_NOTES.md"
release_sha256sums "${partial}"

rm -rf "${release}"
mv "${partial}" "${release}"
log "release ${RELEASE_VERSION} in ${release}:"
cat "${release}"/images/*.digest >&2

#!/usr/bin/env bash
# Cuts a release into _output/release/<version>/: binaries (linux amd64 and arm64), images (OCI
# layout, OCI tar, docker-archives), kubeadm static-pod manifests pointing at the images, an SPDX
# SBOM, RELEASE_NOTES.md from the patch headers, and SHA256SUMS of all of it. The directory
# appears only when everything is in it.
#   REGISTRY=registry.example.com/k8s build/release.sh
set -o errexit -o nounset -o pipefail
. "$(dirname "$0")/lib.sh"

export REGISTRY=${REGISTRY:-registry.local/idc-lts}
export ARCHS=${ARCHS:-amd64 arm64}
release="${OUTPUT_DIR}/release/${RELEASE_VERSION}"
partial="${release}.partial"
rm -rf "${partial}"
mkdir -p "${partial}"/{bin,images,manifests}

"$(dirname "$0")/images.sh"
images="${OUTPUT_DIR}/images/${RELEASE_VERSION}"
binaries=()
for arch in ${ARCHS}; do
  from="${OUTPUT_DIR}/bin/patched"
  [ "${arch}" = amd64 ] || from+="/linux_${arch}"
  mkdir -p "${partial}/bin/linux-${arch}"
  for component in kube-controller-manager kube-scheduler; do
    cp "${from}/${component}" "${partial}/bin/linux-${arch}/"
    binaries+=("${partial}/bin/linux-${arch}/${component}")
  done
done
cp -r "${images}"/. "${partial}/images/"
for arch in ${ARCHS}; do
  (cd "${REPO_ROOT}" && CGO_ENABLED=0 GOOS=linux GOARCH=${arch} go build -trimpath -buildvcs=false \
    -ldflags="-s -w -buildid=" -o "${partial}/bin/linux-${arch}/cpswap" ./build/cmd/cpswap)
done

log "static-pod manifests from kubeadm ${UPSTREAM_VERSION}"
"$(dirname "$0")/build.sh" stock kubeadm
kubeadm_root=$(mktemp -d)
trap 'rm -rf "${kubeadm_root}"' EXIT
cat > "${kubeadm_root}/kubeadm.yaml" <<EOT
apiVersion: kubeadm.k8s.io/v1beta2
kind: ClusterConfiguration
kubernetesVersion: ${RELEASE_VERSION}
imageRepository: ${REGISTRY}
EOT
"${OUTPUT_DIR}/bin/stock/kubeadm" init phase control-plane all --config /kubeadm.yaml --rootfs "${kubeadm_root}" >/dev/null 2>&1 ||
  die "kubeadm could not write the control-plane manifests"
for component in kube-controller-manager kube-scheduler; do
  cp "${kubeadm_root}/etc/kubernetes/manifests/${component}.yaml" "${partial}/manifests/"
done

epoch=$(tree_git log -1 --format=%ct patched)
(cd "${REPO_ROOT}" && go run ./build/cmd/sbom -release "${RELEASE_VERSION}" -epoch "${epoch}" \
  -lock images/base-packages.lock "${binaries[@]}") > "${partial}/sbom.spdx.json"
"$(dirname "$0")/release-notes.sh" > "${partial}/RELEASE_NOTES.md"
sums=$(cd "${partial}" && find . -type f | LC_ALL=C sort | sed 's|^\./||' | xargs sha256sum)
printf '%s\n' "${sums}" > "${partial}/SHA256SUMS"

rm -rf "${release}"
mv "${partial}" "${release}"
log "release ${RELEASE_VERSION} in ${release}:"
cat "${release}"/images/*.digest >&2

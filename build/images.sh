#!/usr/bin/env bash
# Builds the kube-controller-manager and kube-scheduler images of the patched build, without a
# container daemon, into _output/images/<version>/: per component an OCI layout (one index for
# all ARCHS), a tar of it (ctr import) and a docker-archive per architecture (docker load).
#   REGISTRY=registry.example.com/k8s ARCHS="amd64 arm64" build/images.sh
set -o errexit -o nounset -o pipefail
. "$(dirname "$0")/lib.sh"

registry=${REGISTRY:-registry.local/idc-lts}
archs=${ARCHS:-amd64 arm64}
out="${OUTPUT_DIR}/images/${RELEASE_VERSION}"
commit=$(tree_git rev-parse "patched^{commit}")
epoch=$(tree_git log -1 --format=%ct patched)

image_build=$(image_build_tool)

for arch in ${archs}; do
  bin_dir="${OUTPUT_DIR}/bin/patched"
  [ "${arch}" = amd64 ] || bin_dir+="/linux_${arch}"
  GOARCH=${arch} "$(dirname "$0")/build.sh" patched kube-controller-manager kube-scheduler
  "$(dirname "$0")/base-rootfs.sh" "${arch}"
done

rm -rf "${out}"
mkdir -p "${out}"
for component in kube-controller-manager kube-scheduler; do
  platform_args=()
  for arch in ${archs}; do
    bin_dir="${OUTPUT_DIR}/bin/patched"
    [ "${arch}" = amd64 ] || bin_dir+="/linux_${arch}"
    platform_args+=(-platform "linux/${arch}=${bin_dir}/${component},${OUTPUT_DIR}/images/rootfs/${arch}")
  done
  "${image_build}" -component "${component}" -version "${RELEASE_VERSION}" -revision "${commit}" \
    -repo "${registry}/${component}" -epoch "${epoch}" -out "${out}" "${platform_args[@]}"
done
log "images in ${out}"

#!/usr/bin/env bash
# Assembles the images of the patched components, without a container daemon, into
# _output/images/<version>/: per component an OCI layout (one index for all ARCHS), a tar of it
# (ctr import) and a docker-archive per architecture (docker load). It takes the binaries and base
# root filesystems that earlier stages made (make images runs them: build/build.sh --all-archs
# patched, images/base/rootfs.sh).
#   REGISTRY=registry.example.com/k8s ARCHS="amd64 arm64" images/control-plane/build.sh
set -o errexit -o nounset -o pipefail
. "$(dirname "$0")/../../build/lib.sh"

out="${OUTPUT_DIR}/images/${RELEASE_VERSION}"
commit=$(tree_git rev-parse "patched^{commit}")
epoch=$(tree_git log -1 --format=%ct patched)

for arch in ${ARCHS}; do
  for component in "${COMPONENTS[@]}"; do
    [ -x "$(bin_dir patched "${arch}")/${component}" ] ||
      die "no $(bin_dir patched "${arch}")/${component}: run 'make images' (or build/build.sh --all-archs patched)"
  done
  [ -d "${OUTPUT_DIR}/images/rootfs/${arch}" ] || die "no base rootfs for ${arch}: run 'make images' (or images/base/rootfs.sh ${arch})"
done
image_build=$(image_build_tool)

rm -rf "${out}"
mkdir -p "${out}"
for component in "${COMPONENTS[@]}"; do
  platform_args=()
  for arch in ${ARCHS}; do
    platform_args+=(-platform "linux/${arch}=$(bin_dir patched "${arch}")/${component},${OUTPUT_DIR}/images/rootfs/${arch}")
  done
  "${image_build}" -component "${component}" -version "${RELEASE_VERSION}" -revision "${commit}" \
    -repo "${REGISTRY}/${component}" -epoch "${epoch}" -out "${out}" "${platform_args[@]}"
done
log "images in ${out}"

#!/usr/bin/env bash
# Builds the end-to-end test's fixture images (linux/amd64) with the release's image builder:
# the stock control plane tagged as upstream's, so that kubeadm v1.17.3's manifests run unchanged,
# and a pause image for the kubelet's pod sandboxes. Test fixtures only, never released.
#   images/e2e/build.sh      -> _output/images/e2e/<name>-amd64.docker.tar
set -o errexit -o nounset -o pipefail
. "$(dirname "$0")/../../build/lib.sh"

out="${OUTPUT_DIR}/images/e2e"
stock_bin=$(bin_dir stock)
e2e_bin=$(bin_dir e2e)
commit=$(tree_git rev-parse "stock^{commit}")
epoch=$(tree_git log -1 --format=%ct stock)

image_build=$(image_build_tool)
mkdir -p "${e2e_bin}"
# The sandbox's process, a static Go stand-in for upstream's build/pause (nothing can be pulled).
(cd "${REPO_ROOT}" && CGO_ENABLED=0 go build -trimpath -o "${e2e_bin}/pause" ./images/e2e/pause)
[ -d "${OUTPUT_DIR}/images/rootfs/amd64" ] || die "no base rootfs for amd64: run 'make test-e2e' (or images/base/rootfs.sh amd64)"

# name tag binary: the tags kubeadm v1.17.3 and kubelet v1.17.3 name by default
# (cmd/kubeadm/app/constants: DefaultEtcdVersion, PauseVersion).
fixtures="kube-apiserver v1.17.3 ${stock_bin}/kube-apiserver
kube-controller-manager v1.17.3 ${stock_bin}/kube-controller-manager
kube-scheduler v1.17.3 ${stock_bin}/kube-scheduler
etcd 3.4.3-0 ${stock_bin}/etcd
pause 3.1 ${e2e_bin}/pause"

rm -rf "${out}"
mkdir -p "${out}"
while read -r name tag binary; do
  [ -x "${binary}" ] || die "missing ${binary}: run 'make build'"
  "${image_build}" -component "${name}" -version "${tag}" -revision "${commit}" \
    -repo "k8s.gcr.io/${name}" -epoch "${epoch}" -out "${out}" \
    -platform "linux/amd64=${binary},${OUTPUT_DIR}/images/rootfs/amd64" >/dev/null
  rm -rf "${out}/${name}.oci" "${out}/${name}.oci.tar"
done <<<"${fixtures}"
log "fixture images in ${out}: $(cd "${out}" && echo ./*.docker.tar)"

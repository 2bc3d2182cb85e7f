#!/usr/bin/env bash
# Builds binaries of one variant of the tree: a git ref of the upstream tree (stock, patched,
# without-NNNN), checked out in its own worktree under _output/work/<variant>.
#   build/build.sh VARIANT [COMMAND...]     COMMAND: kube-controller-manager kube-scheduler
#                                           kube-apiserver kubeadm kubelet etcd (default: the first two)
# Binaries land in _output/bin/<variant>/ (linux/amd64) or _output/bin/<variant>/<os>_<arch>/.
# The same ref and toolchain give byte-identical binaries: -trimpath, no build id, no VCS stamp,
# build date from the commit (SOURCE_DATE_EPOCH).
set -o errexit -o nounset -o pipefail
. "$(dirname "$0")/lib.sh"

[ $# -ge 1 ] || die "usage: $0 VARIANT [COMMAND...]"
variant=$1
shift
commands=("$@")
[ ${#commands[@]} -gt 0 ] || commands=(kube-controller-manager kube-scheduler)

worktree=$(checkout_variant "${variant}")
commit=$(git -C "${worktree}" rev-parse HEAD)

case "${variant}" in
  stock) version="${UPSTREAM_VERSION}" ;;   # upstream plus build fixes: it is v1.17.3
  *) version="${RELEASE_VERSION}" ;;
esac
[ "${variant}" = patched ] || [ "${variant}" = stock ] || version="${RELEASE_VERSION}-${variant}"
SOURCE_DATE_EPOCH=$(git -C "${worktree}" log -1 --format=%ct "${commit}")
export SOURCE_DATE_EPOCH
build_date=$(date -u -d "@${SOURCE_DATE_EPOCH}" +%Y-%m-%dT%H:%M:%SZ)
major=${UPSTREAM_VERSION#v}; major=${major%%.*}
minor=${UPSTREAM_VERSION#v*.}; minor=${minor%%.*}

ldflags="-s -w -buildid="
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags+=" -X ${pkg}.gitVersion=${version} -X ${pkg}.gitCommit=${commit}"
  ldflags+=" -X ${pkg}.gitTreeState=clean -X ${pkg}.buildDate=${build_date}"
  ldflags+=" -X ${pkg}.gitMajor=${major} -X ${pkg}.gitMinor=${minor}"
done

goos=${GOOS:-linux}
goarch=${GOARCH:-amd64}
bin_dir="${OUTPUT_DIR}/bin/${variant}"
[ "${goos}/${goarch}" = linux/amd64 ] || bin_dir+="/${goos}_${goarch}"
mkdir -p "${bin_dir}"

packages=()
for command in "${commands[@]}"; do
  case "${command}" in
    kube-controller-manager|kube-scheduler|kube-apiserver|kubeadm|kubelet) packages+=("./cmd/${command}") ;;
    etcd) packages+=(go.etcd.io/etcd) ;;
    *) die "unknown command '${command}'" ;;
  esac
done

log "building ${variant} (${version}, ${commit:0:12}) for ${goos}/${goarch}: ${commands[*]}"
(
  cd "${worktree}"
  CGO_ENABLED=0 GOOS=${goos} GOARCH=${goarch} \
    go build -trimpath -buildvcs=false -ldflags="${ldflags}" -o "${bin_dir}/" "${packages[@]}"
)
log "binaries in ${bin_dir}"

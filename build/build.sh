#!/usr/bin/env bash
# Builds binaries of one variant of the tree: a git ref of the upstream tree (stock, patched,
# without-NNNN), checked out in its own worktree under _output/work/<variant>.
#   build/build.sh [--all-archs] VARIANT [COMMAND...|harness]
# COMMAND: kube-controller-manager kube-scheduler kube-apiserver kubeadm kubelet etcd (default:
# COMPONENTS of lib.sh; "harness": HARNESS_COMMANDS). Binaries land in
# _output/bin/<variant>/linux-<arch>/ (bin_dir), for the host's architecture, or with --all-archs
# for each of ARCHS.
# The same ref and toolchain give byte-identical binaries: -trimpath, no build id, no VCS stamp,
# build date from the commit (SOURCE_DATE_EPOCH).
set -o errexit -o nounset -o pipefail
. "$(dirname "$0")/lib.sh"

archs=${HOST_ARCH}
if [ "${1:-}" = --all-archs ]; then
  archs=${ARCHS}
  shift
fi
[ $# -ge 1 ] || die "usage: $0 [--all-archs] VARIANT [COMMAND...|harness]"
variant=$1
shift
commands=("$@")
[ ${#commands[@]} -gt 0 ] || commands=("${COMPONENTS[@]}")
[ "${commands[*]}" != harness ] || commands=("${HARNESS_COMMANDS[@]}")

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

packages=()
for command in "${commands[@]}"; do
  case "${command}" in
    kube-controller-manager|kube-scheduler|kube-apiserver|kubeadm|kubelet) packages+=("./cmd/${command}") ;;
    etcd) packages+=(go.etcd.io/etcd) ;;
    *) die "unknown command '${command}'" ;;
  esac
done

for arch in ${archs}; do
  out=$(bin_dir "${variant}" "${arch}")
  mkdir -p "${out}"
  log "building ${variant} (${version}, ${commit:0:12}) for linux/${arch}: ${commands[*]}"
  (
    cd "${worktree}"
    CGO_ENABLED=0 GOOS=linux GOARCH=${arch} \
      go build -trimpath -buildvcs=false -ldflags="${ldflags}" -o "${out}/" "${packages[@]}"
  )
  log "binaries in ${out}"
done

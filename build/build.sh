#!/usr/bin/env bash
# Builds binaries of one variant of the tree: a git ref of the upstream tree (stock, patched,
# without-NNNN), checked out in its own worktree under _output/work/<variant>.
#   build/build.sh [--all-archs] VARIANT [COMMAND...|harness]
# COMMAND: kube-controller-manager kube-scheduler kube-apiserver kubeadm kubelet kubectl kube-proxy etcd (default:
# SHIPPED_COMMANDS of lib.sh, what a release ships; "harness": HARNESS_COMMANDS). Binaries land in
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
[ ${#commands[@]} -gt 0 ] || commands=("${SHIPPED_COMMANDS[@]}")
[ "${commands[*]}" != harness ] || commands=("${HARNESS_COMMANDS[@]}")

worktree=$(checkout_variant "${variant}")
commit=$(git -C "${worktree}" rev-parse HEAD)

ldflags=$(version_ldflags "${variant}" "${worktree}")
SOURCE_DATE_EPOCH=$(git -C "${worktree}" log -1 --format=%ct "${commit}")
export SOURCE_DATE_EPOCH
version=$(variant_version "${variant}")

packages=()
for command in "${commands[@]}"; do
  case "${command}" in
    kube-controller-manager|kube-scheduler|kube-apiserver|kubeadm|kubelet|kubectl|kube-proxy) packages+=("./cmd/${command}") ;;
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

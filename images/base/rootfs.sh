#!/usr/bin/env bash
# Assembles the base root filesystem of the images for one architecture from the Debian packages
# pinned in images/base/packages.lock: busybox (a static /bin/sh for flexvolume scripts and
# debugging), the Mozilla CA bundle, /etc/passwd and /etc/group for root, and /tmp.
#   images/base/rootfs.sh [ARCH...]        -> _output/images/rootfs/ARCH (default: each of ARCHS)
set -o errexit -o nounset -o pipefail
. "$(dirname "$0")/../../build/lib.sh"
need_tools apt-get dpkg dpkg-deb sha256sum

lock="${REPO_ROOT}/images/base/packages.lock"
# Prints the path of the verified .deb of package for arch (or "all").
fetch() { fetch_deb "${lock}" "$1" "$2"; }

scratch_root=$(mktemp -d)
trap 'rm -rf "${scratch_root}"' EXIT

# assemble ARCH writes _output/images/rootfs/ARCH.
assemble() {
  local arch=$1 busybox certs scratch rootfs="${OUTPUT_DIR}/images/rootfs/$1"
  busybox=$(fetch busybox-static "${arch}")
  certs=$(fetch ca-certificates all)

  scratch="${scratch_root}/${arch}"
  mkdir -p "${scratch}"
  dpkg-deb -x "${busybox}" "${scratch}/busybox"
  dpkg-deb -x "${certs}" "${scratch}/certs"

  rm -rf "${rootfs}"
  mkdir -p "${rootfs}"/{bin,etc/ssl/certs,tmp,usr/share/doc/busybox-static,usr/share/doc/ca-certificates}
  chmod 1777 "${rootfs}/tmp"
  install -m 0755 "${scratch}/busybox/bin/busybox" "${rootfs}/bin/busybox"
  ln -s busybox "${rootfs}/bin/sh"
  # What update-ca-certificates would write at install time: every Mozilla certificate, in order.
  find "${scratch}/certs/usr/share/ca-certificates/mozilla" -name '*.crt' | LC_ALL=C sort |
    xargs cat > "${rootfs}/etc/ssl/certs/ca-certificates.crt"
  chmod 0644 "${rootfs}/etc/ssl/certs/ca-certificates.crt"
  cp "${scratch}/busybox/usr/share/doc/busybox-static/copyright" "${rootfs}/usr/share/doc/busybox-static/"
  cp "${scratch}/certs/usr/share/doc/ca-certificates/copyright" "${rootfs}/usr/share/doc/ca-certificates/"
  printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' > "${rootfs}/etc/passwd"
  printf 'root:x:0:\nnogroup:x:65534:\n' > "${rootfs}/etc/group"
  chmod 0644 "${rootfs}/etc/passwd" "${rootfs}/etc/group"
  log "base rootfs for ${arch} in ${rootfs} ($(du -sh "${rootfs}" | cut -f1))"
}

archs=("$@")
[ ${#archs[@]} -gt 0 ] || read -r -a archs <<<"${ARCHS}"
for arch in "${archs[@]}"; do
  assemble "${arch}"
done

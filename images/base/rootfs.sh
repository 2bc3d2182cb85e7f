#!/usr/bin/env bash
# Assembles the base root filesystem of the images for one architecture from the Debian packages
# pinned in images/base/packages.lock: busybox (a static /bin/sh for flexvolume scripts and
# debugging), the Mozilla CA bundle, /etc/passwd and /etc/group for root, and /tmp.
#   images/base/rootfs.sh [ARCH...]        -> _output/images/rootfs/ARCH (default: each of ARCHS)
set -o errexit -o nounset -o pipefail
. "$(dirname "$0")/../../build/lib.sh"
need_tools apt-get dpkg dpkg-deb sha256sum

lock="${REPO_ROOT}/images/base/packages.lock"
debs="${OUTPUT_DIR}/images/debs"
mkdir -p "${debs}"

# Prints the path of the verified .deb of package for arch (or "all").
fetch() {
  local package=$1 want_arch=$2 version sha file line
  line=$(awk -v p="${package}" -v a="${want_arch}" '$1 == p && $2 == a {print $3, $4}' "${lock}")
  [ -n "${line}" ] || die "images/base/packages.lock pins no ${package} for ${want_arch}"
  read -r version sha <<<"${line}"
  file="${debs}/${package}_${want_arch}_${sha:0:12}.deb"
  if [ ! -f "${file}" ]; then
    if [ "${want_arch}" != all ] && [ "${want_arch}" != "$(dpkg --print-architecture)" ] &&
       ! dpkg --print-foreign-architectures | grep -qx "${want_arch}"; then
      [ "$(id -u)" = 0 ] || die "downloading ${package}:${want_arch} needs 'dpkg --add-architecture ${want_arch} && apt-get update' as root"
      dpkg --add-architecture "${want_arch}"
      apt-get update -qq
    fi
    local spec="${package}=${version}"
    [ "${want_arch}" = all ] || spec="${package}:${want_arch}=${version}"
    local download
    download=$(mktemp -d "${debs}/download.XXXXXX")
    (cd "${download}" && apt-get download -q "${spec}" >/dev/null 2>&1) ||
      die "apt-get download ${spec} failed: the pinned version may no longer be served; update images/base/packages.lock"
    find "${download}" -name '*.deb' -exec mv {} "${file}" \;
    rm -rf "${download}"
  fi
  echo "${sha}  ${file}" | sha256sum --check --quiet >&2 ||
    die "${file} does not match the sha256 pinned in images/base/packages.lock for ${package} ${want_arch}"
  echo "${file}"
}

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

#!/usr/bin/env bash
# Builds the kubelet's Debian package from a variant's kubelet binary, laid out as upstream's
# kubelet package of 1.17 is (packaging/deb/kubelet/README.md says what it holds and why), so that
# `dpkg -i` upgrades an installed upstream package in place and installing upstream's again rolls
# back. Reproducible: root-owned, fixed modes, every timestamp the variant's commit date.
#   build/deb.sh VARIANT ARCH OUTDIR   (prints the package's path)
# VARIANT patched: version 1.17.3-idc.<REVISION>, what the release ships (it sorts after
# upstream's 1.17.3-00); stock: 1.17.3-00, upstream's version string, the package the tests
# install first in place of upstream's (which no registry here serves).
set -o errexit -o nounset -o pipefail
. "$(dirname "$0")/lib.sh"

[ $# -eq 3 ] || die "usage: $0 VARIANT ARCH OUTDIR"
variant=$1 arch=$2 out=$3
case "${variant}" in
  stock) version="${UPSTREAM_VERSION#v}-00" ;;
  patched) version="${RELEASE_VERSION#v}" ;;
  *) die "no package for variant '${variant}': build/deb.sh packages stock or patched" ;;
esac
case " ${ARCHS} ${HOST_ARCH} " in
  *" ${arch} "*) ;;
  *) die "no package for architecture '${arch}': not in ARCHS (${ARCHS})" ;;
esac
need_tools dpkg-deb
packaging="${REPO_ROOT}/packaging/deb/kubelet"
binary="$(bin_dir "${variant}" "${arch}")/kubelet"
[ -x "${binary}" ] || die "no ${binary}: run 'make build' (the host's architecture) or 'make binaries'"
# A binary of the host's architecture says what it is; another's was built by the same make binaries.
if [ "${arch}" = "${HOST_ARCH}" ] && [ "$("${binary}" --version 2>/dev/null || true)" != "Kubernetes $(variant_version "${variant}")" ]; then
  die "${binary} is not the ${variant} kubelet $(variant_version "${variant}"): run 'make build'"
fi
epoch=$(tree_git log -1 --format=%ct "${variant}")

mkdir -p "${out}"
stage=$(mktemp -d "${out}/.kubelet-${arch}.XXXXXX")
trap 'rm -rf "${stage}"' EXIT
chmod 0755 "${stage}" # the package's ./, which mktemp made private
# Upstream's package holds the binary and the unit only; postinst makes /etc/kubernetes/manifests.
install -d -m 0755 "${stage}"/{DEBIAN,usr/bin,lib/systemd/system}
install -m 0755 "${binary}" "${stage}/usr/bin/kubelet"
install -m 0644 "${packaging}/kubelet.service" "${stage}/lib/systemd/system/kubelet.service"
for script in postinst prerm postrm; do
  install -m 0755 "${packaging}/${script}" "${stage}/DEBIAN/${script}"
done
# As dpkg-gencontrol counts it, whatever filesystem the stage is on: each file's size rounded up
# to KiB, plus one per directory.
installed_size=$(cd "${stage}" && find . -path ./DEBIAN -prune -o \( -type f -printf 'f %s\n' \) -o \( -type d -printf 'd\n' \) |
  awk '$1 == "f" {kib += int(($2 + 1023) / 1024)} $1 == "d" {kib += 1} END {print kib}')
sed -e "s/@VERSION@/${version}/" -e "s/@ARCH@/${arch}/" -e "s/@INSTALLED_SIZE@/${installed_size}/" \
  "${packaging}/control" > "${stage}/DEBIAN/control"
chmod 0644 "${stage}/DEBIAN/control"
if grep -n '@[A-Z_]*@' "${stage}/DEBIAN/control" >&2; then
  die "${packaging}/control: a placeholder above is not one build/deb.sh fills (@VERSION@, @ARCH@, @INSTALLED_SIZE@)"
fi
find "${stage}" -exec touch --no-dereference --date="@${epoch}" {} +

deb="${out}/kubelet_${version}_${arch}.deb"
# gzip: a fifth of xz's time for a 110 MB kubelet (5 s against 30 s here), 30% larger.
SOURCE_DATE_EPOCH=${epoch} dpkg-deb --root-owner-group -Zgzip -z6 --build "${stage}" "${deb}.partial" >/dev/null
mv "${deb}.partial" "${deb}"
echo "${deb}"

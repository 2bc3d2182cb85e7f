#!/usr/bin/env bash
# Pins a set of Debian packages and everything they depend on (not what they recommend or suggest)
# for one architecture, in the format of images/base/packages.lock ("package arch version sha256"),
# so that a build can unpack exactly those with fetch_deb (build/lib.sh). Run it again to move the
# pins to what the archive serves now; review the diff. apt-cache follows every alternative of a
# dependency and every provider of a virtual package, so the closure holds some packages dpkg would
# not install (debconf and cdebconf, three awks): more than needed, never less.
#   hack/lock-debian-closure.sh LOCK ARCH "DESCRIPTION" PACKAGE...
set -o errexit -o nounset -o pipefail
. "$(dirname "$0")/../build/lib.sh"
need_tools apt-cache apt-get dpkg-deb sha256sum

[ $# -ge 4 ] || die "usage: $0 LOCK ARCH \"DESCRIPTION\" PACKAGE..."
lock=$1 arch=$2 description=$3
shift 3
mapfile -t closure < <(apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts --no-breaks \
  --no-replaces --no-enhances "${@/%/:${arch}}" | grep -vE '^[[:space:]<]' | sed "s/:${arch}\$//" | sort -u)
[ ${#closure[@]} -gt 0 ] || die "apt-cache knows none of $*: run 'apt-get update'"

download=$(mktemp -d)
trap 'rm -rf "${download}"' EXIT
(cd "${download}" && apt-get download -q -o APT::Sandbox::User=root "${closure[@]/%/:${arch}}" >/dev/null) ||
  die "apt-get download failed for the closure of $*"
{
  echo "# ${description}"
  echo "# Debian packages: $* and what they depend on, for ${arch}: package, architecture, version,"
  echo "# sha256 of the .deb. Written by hack/lock-debian-closure.sh; fetch_deb (build/lib.sh) downloads"
  echo "# exactly these and checks each sha256."
  for deb in "${download}"/*.deb; do
    printf '%s %s %s %s\n' "$(dpkg-deb -f "${deb}" Package)" "$(dpkg-deb -f "${deb}" Architecture)" \
      "$(dpkg-deb -f "${deb}" Version)" "$(sha256sum "${deb}" | cut -d' ' -f1)"
  done | LC_ALL=C sort
} > "${lock}"
log "${lock}: $(grep -vc '^#' "${lock}") packages"

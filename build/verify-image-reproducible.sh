#!/usr/bin/env bash
# Builds the images a second time from the same inputs (same ARCHS as the first build) and
# requires the same index digests.
set -o errexit -o nounset -o pipefail
. "$(dirname "$0")/lib.sh"

images="${OUTPUT_DIR}/images/${RELEASE_VERSION}"
[ -f "${images}/kube-controller-manager.digest" ] || die "no images in ${images}; run images/control-plane/build.sh first"
saved=$(mktemp -d)
trap 'rm -rf "${saved}"' EXIT
cp "${images}"/*.digest "${saved}/"
"${REPO_ROOT}/images/control-plane/build.sh" >/dev/null
for digest in "${saved}"/*.digest; do
  name=$(basename "${digest}")
  if ! cmp -s "${digest}" "${images}/${name}"; then
    die "${name%.digest}: image digest $(cat "${digest}") then $(cat "${images}/${name}") from the same inputs"
  fi
  log "${name%.digest}: $(cat "${digest}") twice"
done

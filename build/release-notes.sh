#!/usr/bin/env bash
# Prints RELEASE_NOTES.md for the release, made from the patches' own headers.
set -o errexit -o nounset -o pipefail
. "$(dirname "$0")/lib.sh"

# The body of a patch's message: after the Subject, before the trailers and the diffstat.
patch_body() {
  sed -n '/^Subject: /,/^---$/p' "$1" | sed '1,/^$/d; /^---$/d' |
    grep -vE '^(Upstream-PR|Upstream-Release|Category|Reason|Verified-By|Regression-Test|Regression-Unit-Test|CVE): '
}

patch_subject() {
  sed -n '/^Subject: /,/^$/p' "$1" | sed 's/^Subject: \[PATCH\] //' | tr '\n' ' ' | sed 's/  */ /g; s/ $//'
}

cat <<EOT
# ${RELEASE_VERSION}

kube-controller-manager and kube-scheduler ${UPSTREAM_VERSION} with the patches below, built with
${GO_TOOLCHAIN} from the hash-verified upstream module sources. They replace upstream's images in a
kubeadm ${UPSTREAM_VERSION} control plane; kube-apiserver stays stock. Series commit:
\`$(tree_git rev-parse "patched^{commit}")\`. Every fix upstream shipped in 1.17 after
${UPSTREAM_VERSION}, and whether this release carries it: \`patches/UPSTREAM.md\`.

EOT

# Every CVE the series fixes, for scanners and security reviews; patches/SECURITY.md says what
# was considered and not patched.
mapfile -t fixed_cves < <(series_patches | while read -r name; do
  patch_field "${PATCHES_DIR}/${name}" CVE | tr ',' '\n'
done | sed 's/^ *//; s/ *$//' | sed '/^$/d' | LC_ALL=C sort -u -t- -k2,2n -k3,3n)
if [ ${#fixed_cves[@]} -gt 0 ]; then
  printf 'CVEs fixed (%d): %s. CVEs considered and not patched, with the reasons: %s.\n\n' \
    "${#fixed_cves[@]}" "$(printf '%s, ' "${fixed_cves[@]}" | sed 's/, $//')" "\`patches/SECURITY.md\`"
fi

for category in backport security fork build; do
  case "${category}" in
    backport) title="Fixes backported from upstream" ;;
    security) title="Security fixes" ;;
    fork) title="Changes of this fork" ;;
    build) title="Build fixes (no change in behaviour)" ;;
  esac
  printed=false
  while read -r name; do
    patch="${PATCHES_DIR}/${name}"
    [ "$(patch_field "${patch}" Category)" = "${category}" ] || continue
    ${printed} || { printf '## %s\n\n' "${title}"; printed=true; }
    printf '### %s\n\n' "$(patch_subject "${patch}")"
    printf -- '- Why: %s\n' "$(patch_field "${patch}" Reason)"
    cves=$(patch_field "${patch}" CVE)
    [ -z "${cves}" ] || printf -- '- CVEs: %s\n' "${cves}"
    printf -- '- Upstream: %s, first released in %s\n' "$(patch_field "${patch}" Upstream-PR)" "$(patch_field "${patch}" Upstream-Release)"
    printf -- '- Verified by: %s\n' "$(patch_field "${patch}" Verified-By)"
    printf -- '- Patch: %s\n\n' "\`patches/${name}\`"
    if [ "${category}" != build ]; then
      patch_body "${patch}"
      echo
    fi
  done < <(series_patches)
done

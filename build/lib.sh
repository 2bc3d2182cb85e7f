# shellcheck shell=bash
# Shared settings for the pipeline scripts: sourced, never run.
# The variables set here are for the scripts that source this file.
# shellcheck disable=SC2034

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUTPUT_DIR=${OUTPUT_DIR:-${REPO_ROOT}/_output}
# The upstream tree as a git repository: tag "upstream" is pristine v1.17.3, branch "patched"
# carries the series, tag "stock" is the last build-fix patch.
TREE_DIR=${TREE_DIR:-${OUTPUT_DIR}/src/kubernetes}
PATCHES_DIR=${PATCHES_DIR:-${REPO_ROOT}/patches}
SERIES_FILE=${SERIES_FILE:-${PATCHES_DIR}/series}

# shellcheck source=VERSION
. "${REPO_ROOT}/VERSION"
RELEASE_VERSION="${UPSTREAM_VERSION}-idc.${REVISION}"
export GOTOOLCHAIN="${GO_TOOLCHAIN}"
# Module downloads are always checked against go.sum and the checksum database, and none bypasses
# the proxy or its checks (the variables Go reads for that are emptied).
export GOFLAGS="-mod=readonly"
export GONOSUMDB="" GONOPROXY="" GOINSECURE="" GOPRIVATE=""
unset GOSUMDB

# The components this fork replaces, in the order everything lists them (kubeadm's: a master's
# kube-apiserver is swapped before the components that talk to it); the stock harness (the control
# plane the tests run them against) is built with them. test/harness.Components says the same for
# the Go tests (test/pipeline checks that they agree).
COMPONENTS=(kube-apiserver kube-controller-manager kube-scheduler)
HARNESS_COMMANDS=("${COMPONENTS[@]}" etcd kubeadm kubelet)
# What the release ships for every node beside the components: binaries with no image, built from
# the patched tree like them, scanned like them, and installed from the release's Debian packages
# (build/deb.sh, packaging/deb/). The shipped binaries are both lists.
NODE_COMMANDS=(kubelet)
SHIPPED_COMMANDS=("${COMPONENTS[@]}" "${NODE_COMMANDS[@]}")
# The components the regression suites start from the build under test (VARIANT_UNDER_TEST),
# always against the stock kube-apiserver: what prove-patches builds of each variant without a patch.
SUITE_COMPONENTS=(kube-controller-manager kube-scheduler)
# Where images are tagged and for which architectures; override with REGISTRY=... ARCHS="...".
REGISTRY=${REGISTRY:-registry.local/idc-lts}
ARCHS=${ARCHS:-amd64 arm64}
# Where make release cuts the release and make publish reads it; the last element is the version.
RELEASE_DIR=${RELEASE_DIR:-${OUTPUT_DIR}/release/${RELEASE_VERSION}}
# The architecture of the machine that runs the tests (and of the tests' binaries).
case "$(uname -m)" in
  aarch64|arm64) HOST_ARCH=arm64 ;;
  *) HOST_ARCH=amd64 ;;
esac

# Binaries of a variant for one architecture (the host's by default): _output/bin/<variant>/linux-<arch>,
# the layout of a release's bin/ too.
bin_dir() {
  echo "${OUTPUT_DIR}/bin/$1/linux-${2:-${HOST_ARCH}}"
}

# Identity and dates of every commit the pipeline makes, so commit hashes match on every machine.
PIPELINE_NAME="idc-lts pipeline"
PIPELINE_EMAIL="pipeline@idc-lts.invalid"
# Date of the upstream v1.17.3 module version (its .info Time); the pristine commit carries it.
UPSTREAM_DATE="2020-02-11T18:06:26Z"

log() { printf '==> %s\n' "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# need_tools COMMAND...: stops naming every command missing from PATH and what installs it.
need_tools() {
  local missing=() tool
  for tool in "$@"; do
    command -v "${tool}" >/dev/null 2>&1 || missing+=("${tool}")
  done
  [ ${#missing[@]} -eq 0 ] || die "missing ${missing[*]}: run 'sudo hack/install-tools.sh' (README), which installs every tool the targets need"
}

# git on the upstream tree, blind to the user's and the system's git configuration.
tree_git() {
  GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1 \
  GIT_AUTHOR_NAME="${PIPELINE_NAME}" GIT_AUTHOR_EMAIL="${PIPELINE_EMAIL}" \
  GIT_COMMITTER_NAME="${PIPELINE_NAME}" GIT_COMMITTER_EMAIL="${PIPELINE_EMAIL}" \
    git -C "${TREE_DIR}" -c core.autocrlf=false -c core.fileMode=true -c diff.algorithm=myers \
      -c diff.noprefix=false -c diff.mnemonicPrefix=false -c diff.renames=true \
      -c format.signature= -c am.threeWay=false -c advice.detachedHead=false "$@"
}

# Patch file names listed in the series, in order, without comments or blank lines.
series_patches() {
  sed -e 's/#.*//' -e 's/[[:space:]]*$//' -e '/^$/d' "${SERIES_FILE}"
}

# The patches' provenance headers (git trailers such as "Category:") are defined, parsed and
# checked in one place, build/patchmeta; scripts reach it through build/cmd/patchmeta, built once
# per script by need_patchmeta (call it at the script's top level, not in a subshell).
PIPELINE_AUTHOR="${PIPELINE_NAME} <${PIPELINE_EMAIL}>"
need_patchmeta() {
  PATCHMETA="${OUTPUT_DIR}/tools/patchmeta"
  (cd "${REPO_ROOT}" && go build -trimpath -o "${PATCHMETA}" ./build/cmd/patchmeta) || die "cannot build build/cmd/patchmeta"
}

# Value of a provenance field in a patch file's header ("" when absent).
patch_field() {
  patch_field_all "$@" | head -n 1
}

# Every value of a field that may repeat, one a line.
patch_field_all() {
  "${PATCHMETA:?need_patchmeta first}" field "$1" "$2"
}

# True when the patch names a test that prove-patches runs on the series without it
# (Regression-Test or Regression-Unit-Test).
has_regression_proof() {
  [ -n "$(patch_field "$1" Regression-Test)$(patch_field "$1" Regression-Unit-Test)" ]
}

# Prints one line per problem with the patches' provenance headers; prints nothing when they are fine.
patch_header_problems() {
  "${PATCHMETA:?need_patchmeta first}" check -pipeline-author "${PIPELINE_AUTHOR}" "$@" || true
}

# Regenerates patch files from the commits upstream..REF into DIR, named and numbered by series order.
format_series() {
  local ref=$1 dir=$2
  tree_git format-patch --quiet --zero-commit --no-signature --full-index --no-numbered \
    --output-directory "${dir}" "upstream..${ref}" >/dev/null
}

# Checks out a variant (a ref of the upstream tree: stock, patched, without-NNNN) in its own
# worktree under _output/work and prints the worktree's path.
checkout_variant() {
  local variant=$1 commit worktree
  tree_git rev-parse -q --verify "${variant}^{commit}" >/dev/null ||
    die "the upstream tree has no ref '${variant}'; run 'make patch' (or build/patch.sh --without PATCH)"
  commit=$(tree_git rev-parse "${variant}^{commit}")
  worktree="${OUTPUT_DIR}/work/${variant}"
  if [ ! -e "${worktree}/.git" ]; then
    tree_git worktree prune
    tree_git worktree add -q --detach "${worktree}" "${commit}"
  fi
  # Worktrees are build scratch space: anything left in them is discarded.
  git -C "${worktree}" checkout -q --force --detach "${commit}"
  git -C "${worktree}" clean -q -f -d -x
  echo "${worktree}"
}

# fetch_deb LOCK PACKAGE ARCH: prints the path of the .deb of PACKAGE for ARCH (or "all") that
# LOCK pins (lines "package arch version sha256"), downloaded once (apt-get download checks the
# archive's signatures) into _output/images/debs and held to the pinned sha256.
fetch_deb() {
  local lock=$1 package=$2 want_arch=$3 debs="${OUTPUT_DIR}/images/debs" version sha file line spec download
  line=$(awk -v p="${package}" -v a="${want_arch}" '$1 == p && $2 == a {print $3, $4}' "${lock}")
  [ -n "${line}" ] || die "${lock#"${REPO_ROOT}"/} pins no ${package} for ${want_arch}"
  read -r version sha <<<"${line}"
  mkdir -p "${debs}"
  file="${debs}/${package}_${want_arch}_${sha:0:12}.deb"
  if [ ! -f "${file}" ]; then
    if [ "${want_arch}" != all ] && [ "${want_arch}" != "$(dpkg --print-architecture)" ] &&
       ! dpkg --print-foreign-architectures | grep -qx "${want_arch}"; then
      [ "$(id -u)" = 0 ] || die "downloading ${package}:${want_arch} needs 'dpkg --add-architecture ${want_arch} && apt-get update' as root"
      dpkg --add-architecture "${want_arch}"
      apt-get update -qq
    fi
    spec="${package}=${version}"
    [ "${want_arch}" = all ] || spec="${package}:${want_arch}=${version}"
    download=$(mktemp -d "${debs}/download.XXXXXX")
    (cd "${download}" && apt-get download -q "${spec}" >/dev/null 2>&1) ||
      die "apt-get download ${spec} failed: the pinned version may no longer be served; update ${lock#"${REPO_ROOT}"/}"
    find "${download}" -name '*.deb' -exec mv {} "${file}" \;
    rm -rf "${download}"
  fi
  echo "${sha}  ${file}" | sha256sum --check --quiet >&2 ||
    die "${file} does not match the sha256 pinned in ${lock#"${REPO_ROOT}"/} for ${package} ${want_arch}"
  echo "${file}"
}

# release_sha256sums DIR: writes DIR/SHA256SUMS, the sha256 of every other file under DIR, by path
# (not its signature, SHA256SUMS.sig, which make publish writes beside it with SIGNING_KEY).
release_sha256sums() {
  local sums
  # A signature of the sums being replaced would no longer verify: make publish signs again.
  if [ -e "$1/SHA256SUMS.sig" ]; then
    rm -f "$1/SHA256SUMS.sig"
    log "removed $1/SHA256SUMS.sig: it signed the SHA256SUMS rewritten here; make publish with SIGNING_KEY signs the new one"
  fi
  sums=$(cd "$1" && find . -type f ! -path ./SHA256SUMS ! -path ./SHA256SUMS.sig | LC_ALL=C sort | sed 's|^\./||' | xargs sha256sum)
  printf '%s\n' "${sums}" > "$1/SHA256SUMS"
}

# variant_version VARIANT: the version a variant's binaries report.
variant_version() {
  case "$1" in
    stock) echo "${UPSTREAM_VERSION}" ;;   # upstream plus build fixes: it is v1.17.3
    patched) echo "${RELEASE_VERSION}" ;;
    *) echo "${RELEASE_VERSION}-$1" ;;
  esac
}

# version_ldflags VARIANT WORKTREE: the -ldflags that stamp a build of the worktree's commit with
# the variant's version, its commit and the commit's date (reproducible: no build id).
version_ldflags() {
  local version commit epoch build_date major minor pkg flags
  version=$(variant_version "$1")
  # Called as $(...), where errexit is off: each step that can fail returns.
  commit=$(git -C "$2" rev-parse HEAD) || return 1
  epoch=$(git -C "$2" log -1 --format=%ct "${commit}") || return 1
  build_date=$(date -u -d "@${epoch}" +%Y-%m-%dT%H:%M:%SZ) || return 1
  major=${UPSTREAM_VERSION#v}; major=${major%%.*}
  minor=${UPSTREAM_VERSION#v*.}; minor=${minor%%.*}
  # -w drops DWARF; the symbol table stays (no -s), so that govulncheck, ours and an operator's,
  # sees which functions a binary holds: a stripped one it can only judge module by module.
  flags="-w -buildid="
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    flags+=" -X ${pkg}.gitVersion=${version} -X ${pkg}.gitCommit=${commit}"
    flags+=" -X ${pkg}.gitTreeState=clean -X ${pkg}.buildDate=${build_date}"
    flags+=" -X ${pkg}.gitMajor=${major} -X ${pkg}.gitMinor=${minor}"
  done
  echo "${flags}"
}

# go test for upstream's tests in a variant's worktree, with the flags build.sh builds with
# (CGO_ENABLED=0, -trimpath): the tests then reuse the packages the builds compiled, and the
# worktree's path does not enter the cache keys, so each variant compiles only what it changes.
# Without go test's vet pass: today's vet stops 2019 test code that upstream's Go 1.13 accepted
# (pkg/kubelet's tests convert ints to string types, which vet's stringintconv refuses).
upstream_go_test() {
  CGO_ENABLED=0 go test -trimpath -vet=off "$@"
}

# Go import paths of the packages holding the .go files that FROM..TO changes in the upstream tree.
changed_packages() {
  local from=$1 to=$2
  tree_git diff --name-only "${from}" "${to}" -- '*.go' | xargs -r -n1 dirname |
    sed -e 's|^staging/src/||' -e '/^k8s\.io\//!s|^|k8s.io/kubernetes/|' | LC_ALL=C sort -u
}

# Builds the daemonless image builder (images/builder, a module of its own) and prints its path;
# used as image_build=$(image_build_tool), where errexit does not reach inside the function.
image_build_tool() {
  local tool="${OUTPUT_DIR}/tools/image-build"
  (cd "${REPO_ROOT}/images/builder" && go build -trimpath -o "${tool}" ./cmd/image-build) || return 1
  echo "${tool}"
}

# build_cpswap ARCH DIR: builds cpswap, the operator's tool every release ships, for linux/ARCH
# into DIR/cpswap (static, reproducible: no build id, no VCS stamp; its symbol table kept for
# govulncheck, as version_ldflags says).
build_cpswap() {
  (cd "${REPO_ROOT}" && CGO_ENABLED=0 GOOS=linux GOARCH=$1 go build -trimpath -buildvcs=false \
    -ldflags="-w -buildid=" -o "$2/cpswap" ./cmd/cpswap)
}

# govulncheck_path: the govulncheck VERSION pins (GOVULNCHECK_VERSION), as hack/install-tools.sh
# installs it into GOPATH/bin; stops naming what is missing.
govulncheck_path() {
  local tool
  tool="$(go env GOPATH)/bin/govulncheck"
  [ -x "${tool}" ] || tool=$(command -v govulncheck) ||
    die "missing govulncheck: run 'sudo hack/install-tools.sh' (README), which installs ${GOVULNCHECK_VERSION}"
  # The binary's build information, not -version: that asks the public database for its date.
  [ "$(go version -m "${tool}" 2>/dev/null | awk '$1 == "mod" && $2 == "golang.org/x/vuln" {print $3}')" = "${GOVULNCHECK_VERSION}" ] ||
    die "${tool} is not govulncheck ${GOVULNCHECK_VERSION} (VERSION): run 'sudo hack/install-tools.sh'"
  echo "${tool}"
}

# vulndb_url: the Go vulnerability database govulncheck reads. VULNDB unset: the public one.
# VULNDB may name a URL, a directory in the database's v1 layout, or a zip of it (unpacked once
# under _output/vulndb), for machines with no route to the public one (CI, air-gapped masters).
vulndb_url() {
  local db=${VULNDB:-https://vuln.go.dev} dir sum
  case "${db}" in
    https://*|http://*|file://*) echo "${db}"; return ;;
  esac
  [ -e "${db}" ] || die "VULNDB=${db}: no such file or directory (want a URL, a directory or a zip of the Go vulnerability database)"
  db=$(cd "$(dirname "${db}")" && echo "${PWD}/$(basename "${db}")")
  if [ -d "${db}" ]; then
    dir=${db}
  else
    case "${db}" in *.zip) ;; *) die "VULNDB=${db}: not a directory or a .zip" ;; esac
    sum=$(sha256sum "${db}" | cut -c1-16)
    dir="${OUTPUT_DIR}/vulndb/${sum}"
    if [ ! -d "${dir}" ]; then
      local partial
      mkdir -p "$(dirname "${dir}")"
      partial=$(mktemp -d "${dir}.partial.XXXXXX")
      python3 -m zipfile -e "${db}" "${partial}" >/dev/null || { rm -rf "${partial}"; die "VULNDB=${db}: cannot unpack the zip"; }
      # Another run may have unpacked it meanwhile: keep theirs.
      mv -T "${partial}" "${dir}" 2>/dev/null || rm -rf "${partial}"
    fi
  fi
  [ -f "${dir}/index/db.json" ] || die "VULNDB=${db}: no index/db.json: not the Go vulnerability database's v1 layout"
  echo "file://${dir}"
}

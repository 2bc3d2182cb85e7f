#!/usr/bin/env bash
# make conformance: upstream v1.17.3's conformance tests on a two-node kubeadm cluster, each
# node a real kubelet in a network namespace with no route out, first with the stock control plane and
# kubelets, then with the release's kube-apiserver, kube-controller-manager and kube-scheduler swapped
# in by cpswap and its kubelet package on each node (test/conformance, TestConformance). conformance-report compares the runs into
# docs/conformance.md and the release's conformance.txt, and fails when a test that passed with
# stock did not pass with ours. make conformance builds what it needs first (make release among it).
# Each run's evidence in upstream's form (e2e.log, junit_01.xml: report.WriteEvidence) goes into the
# release's conformance/<run>/.
# A focus (CONFORMANCE_FOCUS) runs some of the tests: only make conformance-subset passes one
# (build/conformance.sh --subset), whose page and summary go to _output/conformance-subset/ and say
# "subset"; docs/conformance.md and the release's conformance.txt are written from whole runs only.
#   CONFORMANCE_NODES=8 build/conformance.sh
#   CONFORMANCE_FOCUS='\[sig-apps\]' build/conformance.sh --subset
set -o errexit -o nounset -o pipefail
. "$(dirname "$0")/lib.sh"

subset=false
case "${1:-}" in
  --subset) subset=true ;;
  "") ;;
  *) die "usage: $0 [--subset] (got '$1')" ;;
esac
if ${subset}; then
  [ -n "${CONFORMANCE_FOCUS:-}" ] || die "make conformance-subset needs CONFORMANCE_FOCUS=<regexp>: the tests to run"
elif [ -n "${CONFORMANCE_FOCUS:-}" ]; then
  die "CONFORMANCE_FOCUS=${CONFORMANCE_FOCUS}: make conformance runs every conformance test; run some with make conformance-subset"
fi

[ "${CONFORMANCE_VARIANTS:-stock ours}" = "stock ours" ] ||
  die "CONFORMANCE_VARIANTS=${CONFORMANCE_VARIANTS}: make conformance compares both runs; run one alone with go test -run '^TestConformance\$' ./test/conformance/"
[ -f "${RELEASE_DIR}/SHA256SUMS" ] || die "no release in ${RELEASE_DIR}: run 'make conformance' (it cuts it first)"
logs="${OUTPUT_DIR}/test-logs/TestConformance"
start=$(date +%s)
# Interrupted, go test dies without its cleanups: what it started goes the way the next run's would.
trap 'trap - INT TERM; make -C "${REPO_ROOT}" conformance-clean; exit 130' INT TERM
# The test checks that the images and the kubelet package it ran are the release's (RELEASE_DIR).
(cd "${REPO_ROOT}" && RELEASE_DIR="${RELEASE_DIR}" go test -count=1 -v -timeout 170m -run '^TestConformance$' ./test/conformance/) ||
  die "TestConformance failed (its log above; the runs' logs in ${logs})"
minutes=$(( ($(date +%s) - start + 30) / 60 ))

page=docs/conformance.md
summary="${RELEASE_DIR}/conformance.txt"
subset_args=()
if ${subset}; then
  mkdir -p "${OUTPUT_DIR}/conformance-subset"
  page="${OUTPUT_DIR}/conformance-subset/conformance.md"
  summary="${OUTPUT_DIR}/conformance-subset/conformance.txt"
  subset_args=(-subset "${CONFORMANCE_FOCUS}")
fi
log "comparing the runs into ${page} and ${summary}"
(cd "${REPO_ROOT}" && go run ./test/conformance/cmd/conformance-report \
  -tests "${logs}/tests.txt" -nodes "${logs}/nodes.txt" -stock "${logs}/junit/stock" -ours "${logs}/junit/ours" \
  -stock-images "${logs}/stock-images.txt" -our-images "${logs}/ours-images.txt" \
  -page "${page}" -summary "${summary}" "${subset_args[@]}" \
  -release "${RELEASE_VERSION}" -commit "$(tree_git rev-parse "patched^{commit}")" \
  -stock-commit "$(tree_git rev-parse "stock^{commit}")" -minutes "${minutes}" \
  -date "$(date -u +%Y-%m-%d)" -machine "$(lscpu | sed -n "s/^Model name: *//p"), $(nproc) cores")
if ${subset}; then
  log "conformance-subset: both runs in ${minutes} min; ${page} (a subset: the release is unchanged)"
  exit 0
fi
rm -rf "${RELEASE_DIR}/conformance"
mkdir -p "${RELEASE_DIR}/conformance"
cp -r "${logs}/evidence/stock" "${logs}/evidence/ours" "${RELEASE_DIR}/conformance/"
release_sha256sums "${RELEASE_DIR}"
log "conformance: both runs in ${minutes} min; ${RELEASE_DIR}/conformance.txt and conformance/{stock,ours}/{e2e.log,junit_01.xml} added to its SHA256SUMS"

#!/usr/bin/env bash
# make conformance: upstream v1.17.3's conformance tests on a one-node kubeadm cluster run by a
# real kubelet in a network namespace with no route out, first with the stock control plane, then
# with the release's kube-controller-manager and kube-scheduler swapped in by cpswap
# (test/conformance, TestConformance). conformance-report compares the runs into
# docs/conformance.md and the release's conformance.txt, and fails when a test that passed with
# stock did not pass with ours. make conformance builds what it needs first (make release among it).
#   CONFORMANCE_NODES=8 CONFORMANCE_FOCUS='' build/conformance.sh
set -o errexit -o nounset -o pipefail
. "$(dirname "$0")/lib.sh"

[ "${CONFORMANCE_VARIANTS:-stock ours}" = "stock ours" ] ||
  die "CONFORMANCE_VARIANTS=${CONFORMANCE_VARIANTS}: make conformance compares both runs; run one alone with go test -run '^TestConformance\$' ./test/conformance/"
[ -f "${RELEASE_DIR}/SHA256SUMS" ] || die "no release in ${RELEASE_DIR}: run 'make conformance' (it cuts it first)"
logs="${OUTPUT_DIR}/test-logs/TestConformance"
start=$(date +%s)
# Interrupted, go test dies without its cleanups: what it started goes the way the next run's would.
trap 'trap - INT TERM; make -C "${REPO_ROOT}" conformance-clean; exit 130' INT TERM
# The test checks that the images it ran are the release's (RELEASE_DIR) before it runs them.
(cd "${REPO_ROOT}" && RELEASE_DIR="${RELEASE_DIR}" go test -count=1 -v -timeout 170m -run '^TestConformance$' ./test/conformance/) ||
  die "TestConformance failed (its log above; the runs' logs in ${logs})"
minutes=$(( ($(date +%s) - start + 30) / 60 ))

log "comparing the runs into docs/conformance.md and ${RELEASE_DIR}/conformance.txt"
(cd "${REPO_ROOT}" && go run ./test/conformance/cmd/conformance-report \
  -stock "${logs}/junit/stock" -ours "${logs}/junit/ours" \
  -stock-images "${logs}/stock-images.txt" -our-images "${logs}/ours-images.txt" \
  -page docs/conformance.md -summary "${RELEASE_DIR}/conformance.txt" \
  -release "${RELEASE_VERSION}" -commit "$(tree_git rev-parse "patched^{commit}")" -minutes "${minutes}" \
  -date "$(date -u +%Y-%m-%d)" -machine "$(lscpu | sed -n "s/^Model name: *//p"), $(nproc) cores")
release_sha256sums "${RELEASE_DIR}"
log "conformance: both runs in ${minutes} min; ${RELEASE_DIR}/conformance.txt added to its SHA256SUMS"

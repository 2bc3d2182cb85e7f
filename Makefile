# Patched kube-controller-manager / kube-scheduler for Kubernetes v1.17.3. `make help` lists targets.
SHELL := /usr/bin/env bash
.SHELLFLAGS := -o errexit -o nounset -o pipefail -c
.DEFAULT_GOAL := help
# Tests run by make fail when what they need is missing; a plain `go test ./...` skips them (test/tier).
export IDC_REQUIRE_PREREQUISITES := 1
# This repository's long suites: go test -v, then each failed test again with what it printed, at
# the end of the target's output, where the part of a long log that CI keeps shows it.
GO_TEST := hack/go-test.sh

##@ Build and release

.PHONY: help
help: ## List the targets, by group
	@awk 'BEGIN {FS = ":.*## "} /^##@ / {printf "\n%s\n", substr($$0, 5)} /^[a-z0-9-]+:.*## / {printf "  %-26s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: source
source: ## Reconstruct pristine upstream v1.17.3 (hash-verified) as a git repo in _output/src
	build/source.sh

.PHONY: patch
patch: source ## Apply patches/series: branch "patched", tag "stock" (build fixes only)
	build/patch.sh

.PHONY: build
build: patch ## Build the stock harness and the patched components and kubelet into _output/bin/{stock,patched}/linux-<arch>
	build/build.sh stock harness
	build/build.sh patched

.PHONY: binaries
binaries: patch ## The patched components and kubelet for every architecture of ARCHS (default "amd64 arm64")
	build/build.sh --all-archs patched

.PHONY: rootfs
rootfs: ## The images' base root filesystems, from the Debian packages pinned in images/, for ARCHS
	images/base/rootfs.sh

.PHONY: images
images: binaries rootfs ## Images of the patched components (REGISTRY=..., ARCHS=...) in _output/images
	images/control-plane/build.sh

.PHONY: images-amd64
images-amd64: build ## The release's images for amd64 only, as the tests use them
	ARCHS=amd64 images/base/rootfs.sh
	ARCHS=amd64 images/control-plane/build.sh

.PHONY: kubeadm
kubeadm: patch ## Stock kubeadm, which writes the release's static-pod manifests
	build/build.sh stock kubeadm

.PHONY: release
release: images kubeadm ## Cut _output/release/<version>: binaries, the kubelet's .deb, images, manifests, SBOM, notes, SHA256SUMS
	build/release.sh

.PHONY: publish
publish: ## Push the release to REGISTRY by digest, SBOM attached, signed with SIGNING_KEY if given, tags last
	build/publish.sh

.PHONY: clean
clean: ## Remove _output/
	rm -rf _output

##@ Quick checks (no root; seconds to minutes)

.PHONY: lint
lint: ## shellcheck the scripts; gofmt and go vet this repository's Go code; docs name VERSION's release
	@command -v shellcheck >/dev/null || { echo "make lint: missing shellcheck: run 'sudo hack/install-tools.sh' (README), which installs every tool the targets need"; exit 1; }
	shellcheck build/*.sh hack/*.sh images/*/*.sh .ci/run packaging/deb/*/{postinst,prerm,postrm}
	build/verify-docs.sh
	@unformatted=$$(find . -name "*.go" -not -path "./_output/*" -exec gofmt -l {} +); [ -z "$$unformatted" ] || { echo "gofmt needed: $$unformatted"; exit 1; }
	go vet ./...
	cd images/builder && go vet ./...

.PHONY: verify-patches
verify-patches: source ## Check the series: listed once, headers, applies (also without each proven patch), regenerates byte for byte
	build/verify-patches.sh

.PHONY: verify-monitoring
verify-monitoring: ## promtool check/test the alerting rules; validate the dashboard's queries
	build/verify-monitoring.sh

.PHONY: vulncheck
vulncheck: build ## govulncheck on every binary we ship and on our modules: each finding fixed or explained in patches/SECURITY.md (offline: VULNDB=dir|zip)
	build/vulncheck.sh

.PHONY: test-unit test-unit-upstream test-unit-repo
test-unit: build ## Upstream tests of every package the series touches, plus this repo's Go tests (one after the other: the repo's read the patched worktree upstream's check out)
	build/test-unit.sh

test-unit-upstream: build ## Upstream's own tests of every package the series touches, on the patched tree
	build/test-unit.sh upstream

test-unit-repo: build ## This repository's Go tests (the pipeline scripts, cpswap, diagnose, the docs check, ...)
	build/test-unit.sh repo

.PHONY: verify-reproducible
verify-reproducible: patch ## Build patched binaries twice (fresh cache, other path) and compare sha256
	build/verify-reproducible.sh

##@ Slow suites (tens of minutes to hours; times in docs/development.md, Measured times)

# make test's order: the checks that compile, one after another (they share two cores), and the
# fixtures; then two lanes side by side, each target's output printed whole when it ends:
# test-unit-upstream, then test-regression, then prove-patches; and test-image, test-publish,
# test-e2e, then test-upstream-subset and test-unit-repo. The suites mostly wait (on leases,
# resyncs, etcd, a kubelet), so the lanes share the cores (upstream's unit tests, which compile,
# beside the image and publish tests, which mostly copy; the regression suites, which bound what
# they wait for, beside the kubelet and integration tests; the proofs' variant builds beside
# upstream's integration tests and this repository's). The sub-make takes what the prerequisites
# made as made (-o) instead of making it again; the release that test-publish and test-e2e cut
# through make runs build/patch.sh, which takes a lock on the tree that prove-patches' variants
# share.
.PHONY: test
test: lint verify-patches verify-monitoring vulncheck e2e-fixtures ## Everything CI runs (needs root: the image, registry and kubelet tests)
	$(MAKE) --no-print-directory $(addprefix -o ,source patch build images-amd64 kubeadm e2e-fixtures) TEST_LANES=1 -j2 \
	  --output-sync=target test-unit-upstream test-regression prove-patches test-image test-publish test-e2e \
	  test-upstream-subset test-unit-repo
	@echo "make test: all checks passed"
ifdef TEST_LANES
test-regression: | test-unit-upstream
prove-patches: | test-regression
test-publish: | test-image
test-e2e: | test-publish
test-upstream-subset: | test-e2e
test-unit-repo: | test-upstream-subset
endif

# Upstream's integration packages (test/integration/...) that judge the controllers, the
# scheduler and kube-apiserver; docs/development.md says why each is here and which run in make test.
UPSTREAM_INTEGRATION_APISERVER_PACKAGES := $(addprefix test/integration/,apiserver apiserver/admissionwebhook \
  apiserver/podlogs auth configmap dryrun etcd events examples master metrics objectmeta pods scale \
  secrets tls)
UPSTREAM_INTEGRATION_PACKAGES := $(addprefix test/integration/,apimachinery client cronjob daemonset \
  defaulttolerationseconds deployment disruption evictions garbagecollector namespace quota \
  replicaset replicationcontroller scheduler serviceaccount serving statefulset ttlcontroller \
  volume volumescheduling) $(UPSTREAM_INTEGRATION_APISERVER_PACKAGES)
# The part of them make test runs (two packages at once; its time: docs/development.md, Measured times): each controller,
# scheduler and kube-apiserver package a patch changes, driven by upstream's tests of it; docs/development.md maps which.
UPSTREAM_INTEGRATION_SUBSET := \
  test/integration/apimachinery:^TestWatchRestartsIfTimeoutNotReached$$/^(RetryWatcher|InformerWatcher) \
  test/integration/apiserver/admissionwebhook:^TestWebhookAdmissionWithoutWatchCache$$ \
  test/integration/auth:^TestNodeAuthorizer$$ \
  test/integration/cronjob \
  test/integration/daemonset:^(TestLaunchWithHashCollision|TestSimpleDaemonSetLaunchesPods|TestTaintedNode)$$ \
  test/integration/disruption \
  test/integration/etcd:^TestEtcdStoragePath$$ \
  test/integration/garbagecollector:^(TestCRDDeletionCascading|TestCustomResourceCascadingDeletion)$$ \
  test/integration/namespace \
  test/integration/replicaset:^(TestDeletingAndFailedPods|TestSpecReplicasChange|TestExtraPodsAdoptionAndDeletion)$$ \
  test/integration/scheduler:^(TestTaintBasedEvictions|TestTaintNodeByCondition|TestPreemption|TestSchedulerInformers)$$ \
  test/integration/serving \
  test/integration/volume:^(TestPodDeletionWithDswp|TestPVCBoundWithADC|TestPersistentVolumeControllerStartup)$$

.PHONY: test-upstream-subset
test-upstream-subset: build ## Upstream's integration tests make test runs on patched, held to the stock baseline
	build/test-upstream-integration.sh patched $(foreach spec,$(UPSTREAM_INTEGRATION_SUBSET),'$(spec)')

.PHONY: test-upstream-integration
test-upstream-integration: build ## Every upstream integration package on patched: each test that passes on stock must pass
	build/test-upstream-integration.sh patched $(UPSTREAM_INTEGRATION_PACKAGES)

.PHONY: test-upstream-baseline
test-upstream-baseline: build ## Run the upstream integration packages on stock and record build/upstreamtest/stock-baseline.yaml
	build/test-upstream-integration.sh --record-baseline $(UPSTREAM_INTEGRATION_PACKAGES)

.PHONY: test-regression
test-regression: build ## Regression suites: stock shows each bug, VARIANT_UNDER_TEST (default patched) does not
	$(GO_TEST) -count=1 -p 2 -timeout 40m ./test/regression/...

.PHONY: prove-patches
prove-patches: build ## Each patch's Regression-Test fails on the series without that patch
	build/prove-patches.sh

.PHONY: prove
prove: ## One patch's proof, as prove-patches makes it: PATCH=NNNN (its Regression-Test fails without it)
	@[ -n "$(PATCH)" ] || { echo "make prove: say which patch: make prove PATCH=NNNN (the number in patches/series)"; exit 1; }
	$(MAKE) --no-print-directory build
	build/prove-patches.sh '$(PATCH)'

.PHONY: ha-figures
ha-figures: build ## The HA fault suite on stock (waits up to 5 min per fault) and patched -> docs/ha-figures.tsv, docs/ha.md's table
	build/ha-figures.sh

.PHONY: bench
bench: build ## Resync, failover, planned handover (kube-controller-manager and kube-scheduler), memory at 2,000-30,000 Services, watch fan-out, stock vs patched -> docs/benchmarks.md
	build/bench.sh

##@ Needs root (Docker, a kubelet, network namespaces)

.PHONY: test-image
test-image: images-amd64 ## Load the amd64 images into Docker, run them, check the digest is reproducible
	ARCHS=amd64 build/verify-image-reproducible.sh
	IMAGE_DIR=$(CURDIR)/_output/images/$$(build/version.sh) RELEASE_VERSION=$$(build/version.sh) \
	  $(GO_TEST) -count=1 -timeout 10m ./test/image/

.PHONY: test-publish
test-publish: build ## A real registry (TLS, auth): make publish, pull back, cosign verify, cpswap --verify-key, bad inputs
	$(GO_TEST) -count=1 -timeout 15m ./test/publish/

.PHONY: e2e-fixtures
e2e-fixtures: images-amd64 kubeadm ## What a kubeadm node run by a real kubelet needs: the stock control plane's images, cpswap, runc-oom-clamp, kubectl
	images/e2e/build.sh
	build/build.sh stock kubectl
	go build -trimpath -o _output/bin/e2e/linux-$$(go env GOARCH)/ ./cmd/cpswap ./test/e2e/runc-oom-clamp

.PHONY: test-e2e
test-e2e: e2e-fixtures ## A kubeadm master run by a real kubelet: the release published to a registry, cpswap onto it by digest and back
	$(GO_TEST) -count=1 -timeout 30m ./test/e2e/

.PHONY: test-conformance-node
test-conformance-node: e2e-fixtures conformance-images ## The conformance cluster alone: two nodes, each in a network namespace with no route out, CNI, kube-proxy, CoreDNS
	$(GO_TEST) -count=1 -timeout 20m -run '^TestConformanceNodeUp$$' ./test/conformance/

.PHONY: test-ha-cluster
test-ha-cluster: e2e-fixtures ## Three kubeadm masters with stacked etcd behind haproxy, each in namespaces of its own (the rolling upgrade's cluster, #48)
	$(GO_TEST) -count=1 -timeout 30m -run '^TestHAClusterUp$$' ./test/haupgrade/

.PHONY: test-ha-upgrade
test-ha-upgrade: e2e-fixtures ## docs/operations.md's blocks on each of those three masters, stock -> ours and back, under a client through the load balancer (#48)
	$(GO_TEST) -count=1 -timeout 90m -run '^TestHAUpgrade$$' ./test/haupgrade/

.PHONY: ha-upgrade-figures
ha-upgrade-figures: test-ha-upgrade ## make test-ha-upgrade, then its step-by-step figures -> docs/ha-upgrade.tsv, docs/ha.md's table
	cp "$${OUTPUT_DIR:-_output}/test-logs/TestHAUpgrade/ha-upgrade.tsv" docs/ha-upgrade.tsv
	go run ./build/cmd/figures write-ha-upgrade

.PHONY: ha-cluster-clean
ha-cluster-clean: ## Remove what a killed make test-ha-cluster left (its processes, namespaces, mounts, cgroups, containers)
	go test -count=1 -v -timeout 5m -run '^TestHAClusterClean$$' ./test/haupgrade/

.PHONY: conformance-build
conformance-build: patch ## Upstream's conformance suite (e2e.test, its 280 tests checked; ginkgo, kubectl, kube-proxy) and the node's CNI plugins and CoreDNS 1.6.5
	build/conformance-build.sh

.PHONY: conformance-images
conformance-images: conformance-build ## The conformance tests' images under the references e2e.test asks for, offline (images/conformance)
	images/conformance/build.sh

.PHONY: conformance
conformance: release e2e-fixtures conformance-images ## Upstream's conformance tests, stock control plane then ours by cpswap, on two nodes offline -> docs/conformance.md, the release's conformance.txt
	build/conformance.sh

.PHONY: conformance-subset
conformance-subset: release e2e-fixtures conformance-images ## make conformance for the tests CONFORMANCE_FOCUS=<regexp> matches -> _output/conformance-subset/ (a page that says "subset")
	build/conformance.sh --subset

.PHONY: conformance-clean
conformance-clean: ## Remove what a killed make conformance left (its processes, namespace, mounts, cgroups, containers)
	go test -count=1 -v -timeout 5m -run '^TestConformanceClean$$' ./test/conformance/

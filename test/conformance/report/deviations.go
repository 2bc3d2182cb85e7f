package report

// Deviation is a way the conformance run differs from a plain run of upstream's suite on a
// kubeadm v1.17.3 cluster, and why it still tests what it claims. The page and the release's
// conformance.txt list every one.
type Deviation struct{ What, Why string }

// Deviations are the run's, in the order the page lists them. Each names where it is made, so
// that a change there shows here in review.
var Deviations = []Deviation{
	{
		What: "The \"stock\" control-plane images and kubelets are v1.17.3 rebuilt from source (tag stock of the series: upstream v1.17.3 plus the build fixes 0001-0003) with this repository's Go toolchain (images/e2e/build.sh; the kubelet in upstream's package layout at 1.17.3-00 by build/deb.sh), not k8s.gcr.io's images and apt's kubelet_1.17.3-00",
		Why:  "nothing can be pulled here; the build fixes change how the tree builds with today's Go, not what it does, and both runs share them, so the comparison isolates our patches 0004 onwards",
	},
	{
		What: "e2e.test is built with one overlay: the webhook and CRD-conversion tests' server certificates name their Service as a subject alternative name (build/conformance-build.sh)",
		Why:  "the Go the tree is built with no longer matches a certificate's Common Name, so those tests could not reach their own servers; upstream's e2e does the same since v1.19",
	},
	{
		What: "Several test images are stand-ins built offline: busybox, httpd and nginx from Debian's busybox, agnhost on Debian's tools, dnsutils and jessie-dnsutils as one Debian (glibc) image under both names (images/conformance/README.md, each with the tests that use it)",
		Why:  "nothing can be pulled here; each stand-in runs the programs the tests run. The DNS tests query the cluster's DNS through both images; upstream builds one on musl and one on glibc to exercise both resolvers, a difference in the pods' libraries that neither our patches nor the control plane touch, so both runs see the same answers",
	},
	{
		What: "Each node's container runtime runs runc through a wrapper that raises a negative oom_score_adj to 0 and drops capabilities this machine cannot grant (test/e2e/runc-oom-clamp)",
		Why:  "the machines this runs on forbid negative oom_score_adj and some capabilities; no conformance test reads either",
	},
	{
		What: "Both nodes run on one machine, each in a network namespace of its own, linked by a bridge in a third that leads nowhere; the worker's kubelet and container runtime see a /var/log/pods of their own (test/kubeadmnode)",
		Why:  "the tests see what two machines give them: two addresses, a pod network each, kube-proxy on each, pods reaching each other across nodes. A kubelet deletes the log directories of pods it does not know, so two cannot share that directory",
	},
	{
		What: "The worker joins with a kubelet.conf written for it by kubeadm v1.17.3's kubeconfig phase with the cluster's CA, instead of kubeadm join's TLS bootstrap (test/kubeadmnode KubeadmJoin)",
		Why:  "the bootstrap ends with the same: a kubelet whose client certificate names system:node:<node> in group system:nodes. No conformance test bootstraps a node",
	},
	{
		What: "The tests run in three ginkgo invocations (in parallel in 8 ginkgo processes, [Serial] alone, the taint tests last; test/conformance/phases.go) instead of one, and their JUnit files are merged",
		Why:  "the suite takes hours one at a time; the split is by name, as upstream's hack/ginkgo-e2e.sh users split it, and the report holds each run to the 280 tests, once each",
	},
}

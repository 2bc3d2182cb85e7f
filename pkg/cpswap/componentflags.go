package cpswap

import "strings"

// componentFlags are the flags kube-controller-manager and kube-scheduler v1.17.3 list in --help,
// the only names cpswap writes into their manifests (--flag, profiles): a misspelt or foreign
// flag would keep the component from starting, and the master would run without it until the
// timeout. TestComponentFlagsMatchTheComponents checks these lists against the built binaries.
var componentFlags = map[string]map[string]bool{
	"kube-controller-manager": flagSet(`
		add-dir-header address allocate-node-cidrs alsologtostderr attach-detach-reconcile-sync-period
		authentication-kubeconfig authentication-skip-lookup authentication-token-webhook-cache-ttl
		authentication-tolerate-lookup-failure authorization-always-allow-paths
		authorization-kubeconfig authorization-webhook-cache-authorized-ttl
		authorization-webhook-cache-unauthorized-ttl bind-address cert-dir cidr-allocator-type
		client-ca-file cloud-config cloud-provider cluster-cidr cluster-name cluster-signing-cert-file
		cluster-signing-key-file concurrent concurrent-deployment-syncs concurrent-endpoint-syncs
		concurrent-gc-syncs concurrent-namespace-syncs concurrent-replicaset-syncs
		concurrent-resource-quota-syncs concurrent-service-endpoint-syncs concurrent-service-syncs
		concurrent-serviceaccount-token-syncs concurrent-statefulset-syncs
		concurrent-ttl-after-finished-syncs configure-cloud-routes contention-profiling
		controller-start-interval controllers deployment-controller-sync-period
		disable-attach-detach-reconcile-sync enable-dynamic-provisioning enable-garbage-collector
		enable-hostpath-provisioner enable-taint-manager endpoint-updates-batch-period
		experimental-cluster-signing-duration external-cloud-volume-plugin feature-gates
		flex-volume-plugin-dir help horizontal-pod-autoscaler-cpu-initialization-period
		horizontal-pod-autoscaler-downscale-stabilization
		horizontal-pod-autoscaler-initial-readiness-delay horizontal-pod-autoscaler-sync-period
		horizontal-pod-autoscaler-tolerance http2-max-streams-per-connection kube-api-burst
		kube-api-content-type kube-api-qps kubeconfig large-cluster-size-threshold leader-elect
		leader-elect-lease-duration leader-elect-renew-deadline leader-elect-resource-lock
		leader-elect-resource-name leader-elect-resource-namespace leader-elect-retry-period
		log-backtrace-at log-dir log-file log-file-max-size log-flush-frequency logtostderr master
		max-endpoints-per-slice min-resync-period namespace-sync-period node-cidr-mask-size
		node-cidr-mask-size-ipv4 node-cidr-mask-size-ipv6 node-eviction-rate node-monitor-grace-period
		node-monitor-period node-startup-grace-period pod-eviction-timeout port profiling
		pv-recycler-increment-timeout-nfs pv-recycler-minimum-timeout-hostpath
		pv-recycler-minimum-timeout-nfs pv-recycler-pod-template-filepath-hostpath
		pv-recycler-pod-template-filepath-nfs pv-recycler-timeout-increment-hostpath
		pvclaimbinder-sync-period requestheader-allowed-names requestheader-client-ca-file
		requestheader-extra-headers-prefix requestheader-group-headers requestheader-username-headers
		resource-quota-sync-period root-ca-file route-reconciliation-period
		secondary-node-eviction-rate secure-port service-account-private-key-file
		service-cluster-ip-range skip-headers skip-log-headers stderrthreshold
		terminated-pod-gc-threshold tls-cert-file tls-cipher-suites tls-min-version
		tls-private-key-file tls-sni-cert-key unhealthy-zone-threshold use-service-account-credentials
		v version vmodule`),
	"kube-scheduler": flagSet(`
		add-dir-header address algorithm-provider alsologtostderr authentication-kubeconfig
		authentication-skip-lookup authentication-token-webhook-cache-ttl
		authentication-tolerate-lookup-failure authorization-always-allow-paths
		authorization-kubeconfig authorization-webhook-cache-authorized-ttl
		authorization-webhook-cache-unauthorized-ttl bind-address cert-dir client-ca-file config
		contention-profiling feature-gates hard-pod-affinity-symmetric-weight help
		http2-max-streams-per-connection kube-api-burst kube-api-content-type kube-api-qps kubeconfig
		leader-elect leader-elect-lease-duration leader-elect-renew-deadline
		leader-elect-resource-lock leader-elect-resource-name leader-elect-resource-namespace
		leader-elect-retry-period lock-object-name lock-object-namespace log-backtrace-at log-dir
		log-file log-file-max-size log-flush-frequency logtostderr master policy-config-file
		policy-configmap policy-configmap-namespace port profiling requestheader-allowed-names
		requestheader-client-ca-file requestheader-extra-headers-prefix requestheader-group-headers
		requestheader-username-headers scheduler-name secure-port skip-headers skip-log-headers
		stderrthreshold tls-cert-file tls-cipher-suites tls-min-version tls-private-key-file
		tls-sni-cert-key use-legacy-policy-config v version vmodule write-config-to`),
}

func flagSet(names string) map[string]bool {
	set := map[string]bool{}
	for _, name := range strings.Fields(names) {
		set["--"+name] = true
	}
	return set
}

package diagnose

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
)

// inputs is everything the findings are computed from: what Run read and counted.
type inputs struct {
	leases        map[string]lease // the electors' Leases in kube-system, by name
	window        time.Duration
	instances     []Instance
	serverVersion string
	counts        counts
	liveDeletions []deletion
	services      serviceCounts
	apiservers    int // addresses of default/kubernetes
	metricsBefore map[string]scrape
	metricsAfter  map[string]scrape
	metricsURLs   map[string]string
	now           time.Time
}

// Defaults of the 1.17 components for the flags the findings read (this fork's differ where
// named).
const (
	stockLock        = "endpointsleases"
	ourLock          = "leases"
	defaultMinResync = 12 * time.Hour
)

var defaultQPS = map[string]struct {
	qps   float64
	burst int
}{
	"kube-controller-manager": {20, 30},
	"kube-scheduler":          {50, 100},
}

// slowPass is how long a pass of writes may wait on the client's rate limit before Endpoints
// changes queued behind it are late enough to matter (a rolling update's removed pods still
// receiving traffic): the seeds' incidents were 30 s to 12 minutes.
const slowPass = 30 * time.Second

func findings(in inputs) []Finding {
	return []Finding{
		leaderElection(in),
		resyncRewrites(in),
		throttling(in),
		backInTime(in),
		components(in),
	}
}

func perMinute(n int, window time.Duration) float64 {
	if window <= 0 {
		return 0
	}
	return float64(n) / window.Minutes()
}

func round1(f float64) float64 {
	v, _ := strconv.ParseFloat(strconv.FormatFloat(f, 'f', 1, 64), 64)
	return v
}

// lockOf is the lock an instance elects its leader with: "" when it does not elect.
func lockOf(in Instance) (lock string, defaulted bool) {
	if v, set := in.Flags["--leader-elect"]; set {
		if on, err := strconv.ParseBool(v); err == nil && !on {
			return "", false
		}
	}
	if v, set := in.Flags["--leader-elect-resource-lock"]; set {
		return v, false
	}
	if _, set := in.Flags["--config"]; set {
		// kube-scheduler's configuration file holds its leader election: not readable here.
		return "unknown (set in its --config file, which the API does not show)", false
	}
	if in.Ours {
		return ourLock, true
	}
	return stockLock, true
}

func usesEndpoints(lock string) bool { return strings.HasPrefix(lock, "endpoints") }

func leaderElection(in inputs) Finding {
	f := Finding{
		ID:       FindingLeaderElection,
		Title:    "leader election through kube-system Endpoints (seed: endpoints-leader-election-churn)",
		Figures:  map[string]float64{},
		Severity: OK,
		Meaning: "Each renewal of an endpoints or endpointsleases lock (every --leader-elect-retry-period, 2 s by default) updates " +
			"a kube-system Endpoints object: about 30 writes a minute per component, each sent to every Endpoints watcher " +
			"(kube-proxy on every node, CNI plugins, ingress controllers), which process them for nothing. The leases lock writes " +
			"a Lease instead, which nothing else watches.",
		Fix: "This fork's kube-controller-manager and kube-scheduler default to the leases lock (patch 0005). From endpointsleases " +
			"(upstream 1.17's default) move one master at a time with `cpswap apply --profile leases` (docs/operations.md); from " +
			"plain endpoints, roll endpointsleases onto every master first, or two leaders can run.",
	}
	var seen []string
	for _, component := range electors {
		ins := componentsOf(in.instances, component)
		locks := map[string][]string{}
		for _, inst := range ins {
			lock, defaulted := lockOf(inst)
			label := lock
			switch {
			case lock == "":
				label = "no leader election"
			case defaulted:
				label += " (the image's default)"
			}
			locks[label] = append(locks[label], inst.Node)
			if usesEndpoints(lock) && f.Severity < Exposed {
				f.Severity = Exposed
			}
		}
		writes := in.counts.lockWrites[key("kube-system", component)]
		rate := perMinute(writes, in.window)
		f.Figures[component+"_endpoints_writes_per_minute"] = round1(rate)
		f.Figures[component+"_lease_writes_per_minute"] = round1(perMinute(in.counts.leaseWrites[component], in.window))
		if writes > 0 {
			f.Severity = Observed
		}
		var lockText []string
		for _, label := range sortedKeys(locks) {
			lockText = append(lockText, fmt.Sprintf("%s on %s", label, strings.Join(locks[label], ", ")))
		}
		if len(ins) == 0 {
			lockText = []string{"no static pod found, upstream's default (endpointsleases) assumed"}
			if f.Severity < Exposed {
				f.Severity = Exposed
			}
		}
		seen = append(seen, fmt.Sprintf("%s: %.1f writes/min to kube-system/%s Endpoints", component, rate, component))
		f.Evidence = append(f.Evidence, fmt.Sprintf("%s lock: %s; in %v: %d Endpoints writes, %d Lease writes",
			component, strings.Join(lockText, "; "), in.window, writes, in.counts.leaseWrites[component]))
	}
	others := 0
	for k, n := range in.counts.lockWrites {
		if k != key("kube-system", electors[0]) && k != key("kube-system", electors[1]) {
			others += n
		}
	}
	f.Figures["other_endpoints_lock_writes_per_minute"] = round1(perMinute(others, in.window))
	if others > 0 {
		f.Evidence = append(f.Evidence, fmt.Sprintf("other Endpoints locks (applications electing through Endpoints): %.1f writes/min", perMinute(others, in.window)))
	}
	f.Seen = strings.Join(seen, "; ")
	return f
}

func resyncRewrites(in inputs) Finding {
	f := Finding{
		ID:      FindingResyncRewrites,
		Title:   "resyncs rewriting unchanged Endpoints (seed: headless-label-endpoint-churn-504, upstream #94112)",
		Figures: map[string]float64{},
		Meaning: "Upstream 1.17.3's endpoint controller compares an Endpoints object's labels with its Service's, and the " +
			"service.kubernetes.io/headless label it adds itself never matches: every full resync (every --min-resync-period " +
			"to twice that, 12 to 24 h by default) PUTs every headless Service's Endpoints, all queued at once ahead of real " +
			"changes. Our incident: 12,954 PUTs per resync, pod changes reaching Endpoints 10 minutes late, 504s. A watcher sees " +
			"the first such rewrite after a change (it drops the last-change-trigger-time annotation); identical later PUTs are " +
			"not stored, so only the apiserver's request count shows them.",
		Fix: "This fork's kube-controller-manager (patch 0004) leaves unchanged Endpoints alone; 0029 and 0039 keep a resync's " +
			"checks from delaying live changes.",
	}
	kcms := componentsOf(in.instances, "kube-controller-manager")
	stock := 0
	for _, inst := range kcms {
		if !inst.Ours {
			stock++
		}
	}
	if len(kcms) == 0 {
		stock = 1 // unknown: upstream's assumed
	}
	rewrites := 0
	for _, n := range in.counts.rewrites {
		rewrites += n
	}
	f.Figures["headless_services"] = float64(in.services.headless)
	f.Figures["services"] = float64(in.services.total)
	f.Figures["metadata_only_rewrites"] = float64(rewrites)
	f.Figures["metadata_only_rewrites_per_minute"] = round1(perMinute(rewrites, in.window))
	f.Figures["endpoints_changes"] = float64(in.counts.changes)
	f.Figures["other_metadata_only_updates"] = float64(in.counts.otherMetadata)
	perResync := 0
	if stock > 0 {
		perResync = in.services.headless
	}
	f.Figures["writes_per_resync"] = float64(perResync)

	switch {
	case rewrites > 0:
		f.Severity = Observed
	case perResync > 0:
		f.Severity = Exposed
	}
	f.Seen = fmt.Sprintf("%d Endpoints rewrites that changed no address in %v (%.1f/min), %d address changes; %d headless Services of %d",
		rewrites, in.window, perMinute(rewrites, in.window), in.counts.changes, in.services.headless, in.services.total)
	if len(kcms) == 0 {
		f.Evidence = append(f.Evidence, "no kube-controller-manager static pod found: its version and flags are unknown, upstream's assumed")
	}
	if in.counts.otherMetadata > 0 {
		f.Evidence = append(f.Evidence, fmt.Sprintf("%d other updates changed only metadata the endpoint controller does not touch on a resync (labels copied from a Service, applications' own Endpoints): not counted", in.counts.otherMetadata))
	}
	holder := in.leases["kube-controller-manager"]
	for _, inst := range kcms {
		minResync, defaulted := defaultMinResync, true
		if v, set := inst.Flags["--min-resync-period"]; set {
			if d, err := time.ParseDuration(v); err == nil {
				minResync, defaulted = d, false
			}
		}
		kind := "this fork's: a resync writes only what changed"
		if !inst.Ours {
			kind = fmt.Sprintf("upstream's: each resync writes all %d headless Services' Endpoints", in.services.headless)
		}
		line := fmt.Sprintf("kube-controller-manager on %s (%s) is %s; --min-resync-period %v", inst.Node, inst.Version, kind, minResync)
		if defaulted {
			line += " (default)"
		}
		line += fmt.Sprintf(": the leader resyncs every %v to %v (the period drawn when it starts leading)", minResync, 2*minResync)
		switch {
		case !leads(holder, inst):
			line += "; not the leader now: it resyncs nothing"
		case holder.acquired.IsZero():
			line += fmt.Sprintf("; the leader: the next resync within %v", 2*minResync)
		default:
			first := holder.acquired.Add(minResync)
			if in.now.Before(first) {
				line += fmt.Sprintf("; the leader since %s: its first resync between %s and %s",
					holder.acquired.UTC().Format(time.RFC3339), first.UTC().Format(time.RFC3339), holder.acquired.Add(2*minResync).UTC().Format(time.RFC3339))
			} else {
				line += fmt.Sprintf("; the leader since %s: the next resync within %v", holder.acquired.UTC().Format(time.RFC3339), 2*minResync)
			}
		}
		f.Evidence = append(f.Evidence, line)
	}
	for _, k := range topKeys(in.counts.rewrites, 5) {
		f.Evidence = append(f.Evidence, fmt.Sprintf("rewritten unchanged: %s ×%d", k, in.counts.rewrites[k]))
	}
	for _, what := range sortedKeys(in.counts.rewroteMeta) {
		f.Evidence = append(f.Evidence, fmt.Sprintf("what the rewrites changed: %s (%d)", what, in.counts.rewroteMeta[what]))
	}
	return f
}

// leads says whether a Lease's holder is the instance: client-go's identity is the host's name
// and a UUID, and kubeadm names a master's Node after its host.
func leads(l lease, inst Instance) bool {
	return l.holder != "" && strings.HasPrefix(l.holder, inst.Node+"_")
}

// clientRate is an instance's --kube-api-qps and --kube-api-burst, defaults filled in; qps 0 or
// burst 0 are client-go's own defaults (5 and 10), a negative qps no limit at all (qps -1).
func clientRate(inst Instance) (qps float64, burst int) {
	d := defaultQPS[inst.Component]
	qps, burst = d.qps, d.burst
	if v, set := inst.Flags["--kube-api-qps"]; set {
		if q, err := strconv.ParseFloat(v, 32); err == nil {
			qps = q
		}
	}
	if v, set := inst.Flags["--kube-api-burst"]; set {
		if b, err := strconv.Atoi(v); err == nil {
			burst = b
		}
	}
	switch {
	case qps == 0:
		qps = 5
	case qps < 0:
		qps = -1
	}
	if burst == 0 {
		burst = 10
	}
	return qps, burst
}

func throttling(in inputs) Finding {
	f := Finding{
		ID:      FindingThrottling,
		Title:   "client-side throttling of kube-controller-manager (seed: kube-api-qps-throttling-delayed-endpoints)",
		Figures: map[string]float64{},
		Meaning: "Every write of kube-controller-manager waits for its client's token bucket (--kube-api-qps, --kube-api-burst; " +
			"20 and 30 by default), shared by all its controllers. A pass that writes more than the bucket holds queues every " +
			"Endpoints change behind it: deleted pods keep receiving traffic. Upstream 1.17 exports no measure of that wait and " +
			"logs it only at -v=4.",
		Fix: "This fork exports the wait as rest_client_rate_limiter_duration_seconds and logs waits over 1 s (patch 0007), and " +
			"its resyncs write nothing unchanged (0004). Raise --kube-api-qps/--kube-api-burst (`cpswap apply --profile " +
			"kcm-client-rate`) when the metric shows waits.",
	}
	kcms := componentsOf(in.instances, "kube-controller-manager")
	if len(kcms) == 0 {
		kcms = []Instance{{Component: "kube-controller-manager", Node: "(no static pod found: upstream assumed)"}}
	}
	worstPass := 0.0
	for _, inst := range kcms {
		qps, burst := clientRate(inst)
		writes := 0
		if !inst.Ours {
			writes = in.services.headless
		}
		pass := 0.0
		if qps > 0 && writes > burst {
			pass = float64(writes-burst) / qps
		}
		if pass > worstPass {
			worstPass = pass
		}
		rate := fmt.Sprintf("--kube-api-qps %g --kube-api-burst %d", qps, burst)
		if qps < 0 {
			rate = "no client rate limit (--kube-api-qps below 0)"
		}
		f.Evidence = append(f.Evidence, fmt.Sprintf("kube-controller-manager on %s: %s; a resync writes %d Endpoints: the last of them waits %.0f s at that rate",
			inst.Node, rate, writes, pass))
	}
	f.Figures["resync_pass_seconds"] = round1(worstPass)
	if worstPass >= slowPass.Seconds() {
		f.Severity = Exposed
	}
	f.Seen = fmt.Sprintf("a resync's last write waits %.0f s on the client's rate limit", worstPass)

	url, asked := in.metricsURLs["kube-controller-manager"]
	if !asked {
		f.Evidence = append(f.Evidence, "the wait itself: not measured (give --metrics kube-controller-manager=<its /metrics URL>; on a kubeadm 1.17 master http://127.0.0.1:10252/metrics)")
		return f
	}
	before, after := in.metricsBefore["kube-controller-manager"], in.metricsAfter["kube-controller-manager"]
	since := "the window"
	b := before.rateLimiter
	switch {
	case after.err != nil:
		f.Evidence = append(f.Evidence, fmt.Sprintf("the wait itself: %s could not be read: %v", url, after.err))
		return f
	case after.rateLimiter == nil:
		f.Evidence = append(f.Evidence, fmt.Sprintf("the wait itself: %s has no %s (upstream 1.17 does not export it)", url, rateLimiterMetric))
		return f
	case before.err != nil, b == nil, after.rateLimiter.count < b.count:
		// Not running at the start, or restarted since (its counters began again).
		since, b = "its start, inside the window", &histogram{}
	}
	a := after.rateLimiter
	requests := a.count - b.count
	waited := a.sum - b.sum
	long := (a.count - a.upToOneSecond) - (b.count - b.upToOneSecond)
	f.Figures["rate_limiter_wait_seconds"] = round1(waited)
	f.Figures["rate_limited_requests"] = float64(requests)
	f.Figures["requests_waiting_over_1s"] = float64(long)
	f.Evidence = append(f.Evidence, fmt.Sprintf("the wait itself (%s, from %s, since %s): %d requests passed the rate limiter, their waits summing to %.1f s; %d waited over 1 s (a standby's client is idle: give the leader's URL)",
		rateLimiterMetric, url, since, requests, waited, long))
	f.Seen += fmt.Sprintf("; measured: %d requests waited over 1 s", long)
	if long > 0 {
		f.Severity = Observed
	}
	return f
}

func backInTime(in inputs) Finding {
	f := Finding{
		ID:      FindingBackInTime,
		Title:   "controllers going back in time after a stale list or resourceVersion (seed: reflector-non-monotonic-resourceversion)",
		Figures: map[string]float64{},
		Meaning: "Upstream 1.17's informers accept a list or watch event older than what they have seen. Behind a load balancer " +
			"over several apiservers, a relist can be answered from a watch cache that lags, and the endpoint controller then " +
			"deletes the Endpoints of Services that exist (and re-creates them when it catches up): traffic to live Services " +
			"fails for as long.",
		Fix: "This fork's informers never go back to an older resourceVersion (patch 0006, with 0014, 0019, 0022 and 0040 for " +
			"relists); 0041 restarts a component whose lock comes back older after an etcd restore.",
	}
	live := in.liveDeletions
	f.Figures["live_endpoints_deleted"] = float64(len(live))
	stock := 0
	for _, c := range electors {
		ins := componentsOf(in.instances, c)
		if len(ins) == 0 {
			stock++ // unknown: upstream's assumed
		}
		for _, inst := range ins {
			if !inst.Ours {
				stock++
			}
		}
	}
	// default/kubernetes lists the apiservers that reconcile it; the mirror pods count those of
	// kubeadm's masters (the larger is the floor).
	apiservers := in.apiservers
	mirrored := componentsOf(in.instances, "kube-apiserver")
	if len(mirrored) > apiservers {
		apiservers = len(mirrored)
	}
	f.Figures["apiservers"] = float64(apiservers)
	for _, inst := range mirrored {
		cacheFlags := []string{}
		for _, name := range []string{"--watch-cache", "--watch-cache-sizes", "--default-watch-cache-size"} {
			if v, set := inst.Flags[name]; set {
				cacheFlags = append(cacheFlags, name+"="+v)
			}
		}
		if len(cacheFlags) == 0 {
			cacheFlags = []string{"defaults (on, 100 events per resource)"}
		}
		f.Evidence = append(f.Evidence, fmt.Sprintf("kube-apiserver on %s: watch cache %s", inst.Node, strings.Join(cacheFlags, " ")))
	}
	f.Evidence = append(f.Evidence, fmt.Sprintf("%d apiserver(s) (default/kubernetes lists %d, %d kube-apiserver static pods); %d kube-controller-manager/kube-scheduler instance(s) without the fix",
		apiservers, in.apiservers, len(mirrored), stock))
	switch {
	case len(live) > 0:
		f.Severity = Observed
	case stock > 0 && apiservers > 1:
		f.Severity = Exposed
	}
	for i, d := range live {
		if i == 5 {
			f.Evidence = append(f.Evidence, fmt.Sprintf("... and %d more", len(live)-5))
			break
		}
		back := "not re-created within the window"
		if d.back > 0 {
			back = fmt.Sprintf("re-created %v later", d.back.Round(time.Second))
		}
		f.Evidence = append(f.Evidence, fmt.Sprintf("Endpoints %s deleted at %s while its Service lived; %s", d.key, d.at.UTC().Format(time.RFC3339), back))
	}
	f.Seen = fmt.Sprintf("%d Endpoints of live Services deleted in %v; %d apiserver(s)", len(live), in.window, apiservers)
	return f
}

func components(in inputs) Finding {
	f := Finding{
		ID:      FindingComponents,
		Title:   "what runs on the masters",
		Figures: map[string]float64{},
		Meaning: "The control plane's static pods as the kubelets report them; ours are tagged v1.17.3-idc.N.",
		Fix:     "docs/operations.md swaps kube-apiserver, kube-controller-manager and kube-scheduler one master at a time.",
	}
	ours := 0
	for _, inst := range in.instances {
		if inst.Ours {
			ours++
		}
	}
	f.Figures["instances"] = float64(len(in.instances))
	f.Figures["ours"] = float64(ours)
	f.Seen = fmt.Sprintf("%d control-plane pods, %d of them ours; the apiserver answering says %s", len(in.instances), ours, in.serverVersion)
	if len(in.instances) == 0 {
		f.Seen = "no kube-apiserver, kube-controller-manager or kube-scheduler static pod in kube-system (not a kubeadm control plane?): versions and flags unknown, the findings assume upstream's"
	}
	for _, c := range append([]string{"kube-apiserver"}, electors...) {
		if ins := componentsOf(in.instances, c); len(ins) > 0 {
			f.Evidence = append(f.Evidence, c+": "+names(ins))
		}
	}
	return f
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// topKeys returns up to n keys with the highest counts, ties by name.
func topKeys(m map[string]int, n int) []string {
	keys := sortedKeys(m)
	sort.SliceStable(keys, func(i, j int) bool { return m[keys[i]] > m[keys[j]] })
	if len(keys) > n {
		keys = keys[:n]
	}
	return keys
}

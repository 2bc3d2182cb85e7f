// Package bench measures the headless-Endpoints resync at incident scale: how many Endpoints one
// full resync rewrites, and how long a deleted pod takes to leave its Endpoints while the resync
// runs, for the stock build and ours, against the stock kube-apiserver and etcd.
package bench

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/idc-lts/kube-1.17/test/fixture"
	"github.com/idc-lts/kube-1.17/test/harness"
)

// Config is one run: a build of kube-controller-manager, its client rate limit, and what else the
// run measures besides the resync.
type Config struct {
	Services int    `json:"services"`
	QPS      int    `json:"qps"`
	Burst    int    `json:"burst"`
	Variant  string `json:"variant"`
	// Failover ends the run by killing the leader with a standby of the same build waiting.
	// (Its JSON name is not "failover", which Result.Failover takes.)
	Failover bool `json:"withFailover,omitempty"`
	// Handover stops the leader with SIGTERM instead (a planned stop: the kubelet replacing its
	// pod for an upgrade step), which a build may answer by releasing its lease; implies Failover.
	Handover bool `json:"handover,omitempty"`
	// Watchers is how many Endpoints watchers and a probe client the resync runs under.
	Watchers int `json:"watchers,omitempty"`
	// Starts is how many times the run starts its build for a memory sample (memory.go) before
	// the measured process.
	Starts int `json:"starts,omitempty"`
}

func (c Config) String() string {
	return fmt.Sprintf("%s N=%d qps=%d/%d%s", c.Variant, c.Services, c.QPS, c.Burst, c.Extras())
}

// Extras is how BENCH_RATES spells what the run measures besides the resync.
func (c Config) Extras() string {
	s := ""
	switch {
	case c.Handover:
		s += " +handover"
	case c.Failover:
		s += " +failover"
	}
	if c.Watchers > 0 {
		s += fmt.Sprintf(" +watchers=%d", c.Watchers)
	}
	if c.Starts > 0 {
		s += fmt.Sprintf(" +starts=%d", c.Starts)
	}
	return s
}

// Result is what one run measured.
type Result struct {
	Config
	// BinarySHA256 identifies the kube-controller-manager binary measured.
	BinarySHA256 string `json:"binarySHA256"`
	// MinResyncPeriod is the --min-resync-period the measured process ran with.
	MinResyncPeriod string `json:"minResyncPeriod"`
	// StartupPassSeconds is how long the measured process took to drain its first full sync.
	StartupPassSeconds float64 `json:"startupPassSeconds"`
	// ResyncWrites counts Endpoints writes from the resync's start until the end of the window,
	// leaving out the ResyncEligible = Services - Deletions Services whose pods the run kept.
	ResyncWrites   int `json:"resyncWrites"`
	ResyncEligible int `json:"resyncEligible"`
	// ResyncPassSeconds is the time from the resync's start until the queue drained.
	ResyncPassSeconds float64 `json:"resyncPassSeconds"`
	// DeletionLatencies, sorted, in seconds: pod deleted -> its address gone from Endpoints.
	DeletionLatencies []float64 `json:"deletionLatenciesSeconds"`
	P50               float64   `json:"p50Seconds"`
	P99               float64   `json:"p99Seconds"`
	Max               float64   `json:"maxSeconds"`
	// PeakRSSBytes and CPUSeconds cover the measured process's whole life.
	PeakRSSBytes int64   `json:"peakRSSBytes"`
	CPUSeconds   float64 `json:"cpuSeconds"`
	// StartPeakRSSBytes are the peaks of the Config.Starts memory starts, and
	// MedianStartPeakRSSBytes their median: what compares builds.
	StartPeakRSSBytes       []int64 `json:"startPeakRSSBytes,omitempty"`
	MedianStartPeakRSSBytes int64   `json:"medianStartPeakRSSBytes,omitempty"`
	// WindowSeconds is the measured window: the resync's start until the last deleted address
	// left its Endpoints and the queue drained. Request counts cover this window.
	WindowSeconds float64 `json:"windowSeconds"`
	// APIServerRequests counts requests the apiserver served in the window, by "VERB resource";
	// it includes the benchmark's own deletions and watches.
	APIServerRequests      map[string]float64 `json:"apiserverRequests"`
	APIServerRequestsTotal float64            `json:"apiserverRequestsTotal"`
	// APIServerCPUSeconds is the apiserver's CPU time in the window (its process_cpu_seconds_total).
	APIServerCPUSeconds float64 `json:"apiserverCPUSeconds"`
	// ControllerManagerRequests is the window's delta of the process's rest_client_requests_total.
	ControllerManagerRequests float64 `json:"controllerManagerRequests"`
	// LeaderElectionWritesPerMinute counts writes to the kube-system/kube-controller-manager
	// Endpoints over the process's life.
	LeaderElectionWritesPerMinute float64 `json:"leaderElectionEndpointsWritesPerMinute"`
	// Unfinished counts the deletions whose address was still in Endpoints when the run gave up
	// (a process that kept exiting); their latencies are lower bounds, until then, and the pass
	// never drained (ResyncPassSeconds 0).
	Unfinished int `json:"unfinished,omitempty"`
	// Exits lists the times the measured process exited during the run (each then started again,
	// as the kubelet would): "leaderelection lost" when the apiserver was too slow to renew its lease.
	Exits []string `json:"exits,omitempty"`
	// FanOut is what the resync sent to Config.Watchers watchers, and what a probe saw.
	FanOut *FanOutResult `json:"fanOut,omitempty"`
	// Failover is what the run measured after the resync, when Config.Failover.
	Failover *FailoverResult `json:"failover,omitempty"`
}

// Options shape the deletions a run makes.
type Options struct {
	// Deletions is how many pods each phase of a run (resync, failover) deletes, one every
	// DeleteInterval, from the phase's start.
	Deletions      int
	DeleteInterval time.Duration
}

// ServicesPerNamespace spreads the Services the way a real cluster does; one namespace of
// thousands would make every sync scan thousands of pods in the lister.
const ServicesPerNamespace = 100

// Namespace is the namespace of Service i.
func Namespace(i int) string { return fmt.Sprintf("%s%03d", namespacePrefix, i/ServicesPerNamespace) }

const namespacePrefix = "bench-"

// CreateServices creates n headless Services, each with one Ready pod, ServicesPerNamespace to a
// namespace.
func CreateServices(b testing.TB, client kubernetes.Interface, n int) []fixture.ServiceFixture {
	var all []fixture.ServiceFixture
	for first := 0; first < n; first += ServicesPerNamespace {
		count := ServicesPerNamespace
		if first+count > n {
			count = n - first
		}
		all = append(all, fixture.CreateServices(b, client, Namespace(first), first, count, fixture.SingleSubset)...)
	}
	return all
}

const (
	lockNamespace = "kube-system"
	lockName      = "kube-controller-manager"
	// startupProbe is the first --min-resync-period tried. A build whose startup pass does not
	// drain well within it is restarted with one longer than that pass, so that the resync the
	// run measures does not merge into the startup pass.
	startupProbe = 30 * time.Second
)

// run is the state of one run.
type run struct {
	b        testing.TB
	cp       *harness.ControlPlane
	cfg      Config
	services []fixture.ServiceFixture
	kcm      *harness.Component
	started  time.Time
	// leaderWrites counts lock writes since the run began; leaderWritesAtStart is its value
	// when the measured process started.
	leaderWrites        func() int
	leaderWritesAtStart int
	// period is the --min-resync-period the instances run with, set by start; exits are why the
	// measured process ended and had to be started again.
	period time.Duration
	exits  []string
}

// Run measures one configuration on a control plane holding services. runIndex picks which
// Services' pods this run deletes, so that runs on the same control plane delete different pods.
func Run(b testing.TB, cp *harness.ControlPlane, services []fixture.ServiceFixture, cfg Config, runIndex int, opts Options) Result {
	b.Helper()
	// Two deletion slots a run, one for the resync and one for the failover.
	resyncSlot, failoverSlot := 2*runIndex, 2*runIndex+1
	if stride := len(services) / opts.Deletions; failoverSlot >= stride {
		b.Fatalf("run %d: %d Services leave room for %d phases of %d deletions", runIndex, len(services), stride, opts.Deletions)
	}
	r := &run{b: b, cp: cp, cfg: cfg, services: services}
	result := Result{Config: cfg, BinarySHA256: fileSHA256(b, harness.Binary(b, cfg.Variant, "kube-controller-manager"))}
	logDir := harness.LogDir(b)
	if cfg.Starts > 0 {
		result.StartPeakRSSBytes = r.measureStarts(logDir)
		result.MedianStartPeakRSSBytes = Median(result.StartPeakRSSBytes)
	}

	r.leaderWrites = r.countLeaderElectionWrites()
	period := startupProbe
	r.start(logDir, period)
	drained := r.waitStartupPass(10 * time.Second)
	if !drained {
		// The startup pass writes Endpoints at the client's rate: give the resync room after it.
		r.kcm.Kill()
		period = startupProbe + time.Duration(1.2*float64(cfg.Services)/float64(cfg.QPS))*time.Second
		b.Logf("%s: startup pass still running after 10 s; restarting with --min-resync-period=%v", cfg, period)
		r.start(logDir, period)
		r.waitStartupPass(0)
	}
	result.MinResyncPeriod = period.String()
	result.StartupPassSeconds = time.Since(r.started).Seconds()

	var standby *harness.Component
	if cfg.Failover {
		standby = r.startStandby(logDir)
	}
	var watchers *endpointsWatchers
	if cfg.Watchers > 0 {
		watchers = startWatchers(b, cp, cfg.Watchers)
	}
	m := r.measureResync(resyncSlot, opts, watchers)
	if watchers != nil {
		watchers.stop()
		result.FanOut = m.fanOut
	}
	result.ResyncWrites, result.ResyncPassSeconds = m.resyncWrites, m.passSeconds
	result.ResyncEligible = cfg.Services - opts.Deletions
	result.DeletionLatencies, result.WindowSeconds, result.Unfinished = m.latencies, m.windowSeconds, m.unfinished
	result.APIServerRequests, result.APIServerRequestsTotal = m.apiserverRequests, m.apiserverTotal
	result.ControllerManagerRequests = m.kcmRequests
	result.APIServerCPUSeconds = m.apiserverCPU
	result.P50, result.P99, result.Max = Percentiles(m.latencies)

	usage, err := ReadProcessUsage(r.kcm.Pid())
	if err != nil {
		b.Fatal(err)
	}
	result.PeakRSSBytes, result.CPUSeconds = usage.PeakRSSBytes, usage.CPUSeconds
	result.LeaderElectionWritesPerMinute = float64(r.leaderWrites()-r.leaderWritesAtStart) / time.Since(r.started).Minutes()
	if standby != nil {
		result.Failover = r.measureFailover(standby, failoverSlot, opts)
	}
	result.Exits = r.exits
	r.kcm.Kill()
	return result
}

// start runs kube-controller-manager's endpoints controller, with leader election as shipped, as
// the only holder of a fresh lock.
func (r *run) start(logDir string, minResyncPeriod time.Duration) {
	r.deleteLocks()
	r.started = time.Now()
	r.leaderWritesAtStart = r.leaderWrites()
	r.period = minResyncPeriod
	r.kcm = r.startInstance(logDir, "kube-controller-manager")
}

// restart records why the measured process exited and starts it again with the same flags.
func (r *run) restart() {
	_, err := r.kcm.Exited()
	exit := fmt.Sprintf("%s exited after %.0f s (%v): %s", r.kcm.Name, time.Since(r.started).Seconds(), err,
		fatalLine(r.kcm.Tail(1000)))
	r.b.Logf("%s: %s; starting it again", r.cfg, exit)
	r.exits = append(r.exits, exit)
	r.kcm = r.startInstance(harness.LogDir(r.b), fmt.Sprintf("%s-%d", r.kcm.Name, len(r.exits)))
}

// fatalLine is the last klog Fatal line of a log's tail (a goroutine dump follows it), or its last line.
func fatalLine(tail string) string {
	lines := strings.Split(strings.TrimSpace(tail), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.HasPrefix(lines[i], "F") {
			return lines[i]
		}
	}
	return lines[len(lines)-1]
}

// startInstance starts one kube-controller-manager of the build under test, with r.period.
func (r *run) startInstance(logDir, processName string) *harness.Component {
	return harness.StartComponent(r.b, r.cp, harness.ComponentOptions{Variant: r.cfg.Variant, Name: processName, LogDir: logDir, Args: []string{
		"--controllers=endpoint",
		fmt.Sprintf("--kube-api-qps=%d", r.cfg.QPS),
		fmt.Sprintf("--kube-api-burst=%d", r.cfg.Burst),
		"--min-resync-period=" + r.period.String(),
	}})
}

// deleteLocks removes the leader-election locks a previous process left, so that the next one
// need not wait for them to expire.
func (r *run) deleteLocks() {
	err := r.cp.Client.CoreV1().Endpoints(lockNamespace).Delete(lockName, nil)
	if err != nil && !apierrors.IsNotFound(err) {
		r.b.Fatal(err)
	}
	err = r.cp.Client.CoordinationV1().Leases(lockNamespace).Delete(lockName, nil)
	if err != nil && !apierrors.IsNotFound(err) {
		r.b.Fatal(err)
	}
}

// countLeaderElectionWrites watches the kube-system/kube-controller-manager Endpoints (the 1.17
// leader-election lock) and returns a function giving the writes seen so far.
func (r *run) countLeaderElectionWrites() func() int {
	var mu sync.Mutex
	writes := 0
	stop := watchEndpoints(r.b, r.cp.Client, lockNamespace, "metadata.name="+lockName, func(*v1.Endpoints, time.Time) {
		mu.Lock()
		writes++
		mu.Unlock()
	})
	r.b.Cleanup(stop)
	return func() int {
		mu.Lock()
		defer mu.Unlock()
		return writes
	}
}

// queue reads the endpoint controller's workqueue_adds_total and workqueue_depth. They read
// as zero until the controller starts, which waits for leadership.
func (r *run) queue() (adds, depth float64) {
	adds, err := r.kcm.Metric("workqueue_adds_total", harness.EndpointQueue)
	if err == nil {
		depth, err = r.kcm.Metric("workqueue_depth", harness.EndpointQueue)
	}
	if errors.Is(err, harness.ErrNoMetric) {
		return 0, 0
	}
	if err != nil {
		r.b.Fatalf("%s: scraping the endpoint queue: %v", r.cfg, err)
	}
	return adds, depth
}

// passLimit bounds a full pass over every Service: N/qps at the client's rate limit, with room for
// an apiserver slowed by watchers and for the deletions' tail.
func (r *run) passLimit() time.Duration {
	return 5*time.Minute + time.Duration(2*float64(r.cfg.Services)/float64(r.cfg.QPS))*time.Second
}

// waitPass waits until the endpoint queue has taken every Service since it counted baseline adds
// and drained, and every address d deleted has left its Endpoints; ready, when given, must hold
// first. It returns when the queue drained, or the zero time if it did not.
//
// A kube-controller-manager that exits meanwhile (an apiserver too slow for it to renew its lease
// makes 1.17 exit with "leaderelection lost") is started again, as the kubelet restarts a static
// pod, and the pass starts over with the new process's startup sync.
func (r *run) waitPass(d *deletions, baseline float64, ready func() (bool, error)) (drainedAt time.Time, err error) {
	err = wait.PollImmediate(250*time.Millisecond, r.passLimit(), func() (bool, error) {
		if exited, _ := r.kcm.Exited(); exited {
			r.restart()
			baseline, drainedAt = 0, time.Time{}
			return false, nil
		}
		if ready != nil {
			if ok, err := ready(); !ok || err != nil {
				return false, err
			}
		}
		if drainedAt.IsZero() {
			if adds, depth := r.queue(); adds >= baseline+float64(r.cfg.Services) && depth == 0 {
				drainedAt = time.Now()
			}
		}
		done, err := d.done()
		return !drainedAt.IsZero() && done, err
	})
	return drainedAt, err
}

// waitStartupPass waits until the process has queued every Service once and its queue has been
// empty for 2 s. With a non-zero probe it gives up, returning false, when the queue has not
// drained that long after every Service was queued.
func (r *run) waitStartupPass(probe time.Duration) bool {
	n := float64(r.cfg.Services)
	var queuedAt, emptySince time.Time
	limit := r.passLimit()
	err := wait.PollImmediate(250*time.Millisecond, limit, func() (bool, error) {
		if exited, err := r.kcm.Exited(); exited {
			return false, fmt.Errorf("kube-controller-manager exited: %v", err)
		}
		adds, depth := r.queue()
		if adds < n {
			return false, nil
		}
		if queuedAt.IsZero() {
			queuedAt = time.Now()
		}
		if depth > 0 {
			emptySince = time.Time{}
			if probe > 0 && time.Since(queuedAt) > probe {
				return true, nil
			}
			return false, nil
		}
		if emptySince.IsZero() {
			emptySince = time.Now()
		}
		return time.Since(emptySince) >= 2*time.Second, nil
	})
	if err != nil {
		r.b.Fatalf("%s: startup pass not over within %v: %v", r.cfg, limit, err)
	}
	return !emptySince.IsZero()
}

type measurement struct {
	resyncWrites      int
	passSeconds       float64
	latencies         []float64
	windowSeconds     float64
	apiserverRequests map[string]float64
	apiserverTotal    float64
	apiserverCPU      float64
	kcmRequests       float64
	fanOut            *FanOutResult
	unfinished        int
}

// measureResync waits for the next full resync, deletes the pods of deletion slot slot one by one
// while it runs, and returns the writes it caused and the deletions' latencies. With watchers, a
// probe client runs through the same window and the watchers' share of it is counted.
func (r *run) measureResync(slot int, opts Options, watchers *endpointsWatchers) measurement {
	b := r.b
	period := r.period
	n := r.cfg.Services
	d := r.watchDeletions(slot, opts)

	baseline, _ := r.queue()
	apiserverBefore := r.apiserverRequests()
	apiserverCPUBefore := r.apiserverCPU()
	kcmBefore := r.kcmRequests()

	// The resync queues every Service at once; half of them queued means it is under way.
	err := wait.PollImmediate(100*time.Millisecond, 2*period+time.Minute, func() (bool, error) {
		adds, _ := r.queue()
		return adds >= baseline+float64(n)/2, nil
	})
	if err != nil {
		b.Fatalf("%s: no resync within %v of the startup pass", r.cfg, 2*period+time.Minute)
	}
	resyncAt := time.Now()
	var probing *probe
	var events, bytes, restarts, relists int64
	if watchers != nil {
		probing = startProbe(b, r.cp, r.services)
		events, bytes, restarts, relists = watchers.counts()
	}
	d.start()

	var m measurement
	drainedAt, err := r.waitPass(d, baseline, nil)
	if err != nil && len(r.exits) > 0 {
		// The process kept losing its lease: what was measured until now is the result.
		m.unfinished = d.outstanding()
		b.Logf("%s: after %v and %d exits, resync pass over: %v, %d of %d deleted addresses still in Endpoints; reporting them as lower bounds",
			r.cfg, r.passLimit(), len(r.exits), !drainedAt.IsZero(), m.unfinished, opts.Deletions)
	} else if err != nil {
		b.Fatalf("%s: after %v, resync pass over: %v, %d of %d deleted addresses still in Endpoints: %v",
			r.cfg, r.passLimit(), !drainedAt.IsZero(), d.outstanding(), opts.Deletions, err)
	}
	if !drainedAt.IsZero() {
		m.passSeconds = drainedAt.Sub(resyncAt).Seconds()
	}
	m.windowSeconds = time.Since(resyncAt).Seconds()
	if watchers != nil {
		e, by, re, rl := watchers.counts()
		m.fanOut = &FanOutResult{Watchers: r.cfg.Watchers, Events: e - events, Bytes: by - bytes, Restarts: re - restarts,
			Relists: rl - relists, Probe: probing.stop()}
	}
	m.resyncWrites, m.latencies = d.finish()
	m.apiserverRequests = map[string]float64{}
	for k, v := range r.apiserverRequests() {
		if d := v - apiserverBefore[k]; d > 0 {
			m.apiserverRequests[k] = d
			m.apiserverTotal += d
		}
	}
	if exited, _ := r.kcm.Exited(); exited {
		r.restart()
	}
	if len(r.exits) == 0 {
		// Across a restart the counter starts over: no figure rather than a wrong one.
		m.kcmRequests = r.kcmRequests() - kcmBefore
	}
	m.apiserverCPU = r.apiserverCPU() - apiserverCPUBefore
	return m
}

// apiserverRequests reads apiserver_request_total by "VERB resource[/subresource]".
func (r *run) apiserverRequests() map[string]float64 {
	families, err := harness.Scrape(r.cp.URL + "/metrics")
	if err != nil {
		r.b.Fatal(err)
	}
	counts := map[string]float64{}
	family, ok := families["apiserver_request_total"]
	if !ok {
		r.b.Fatalf("%s/metrics has no apiserver_request_total", r.cp.URL)
	}
	for _, metric := range family.Metric {
		labels := map[string]string{}
		for _, l := range metric.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		key := labels["verb"] + " " + labels["resource"]
		if labels["subresource"] != "" {
			key += "/" + labels["subresource"]
		}
		counts[key] += metric.GetCounter().GetValue()
	}
	return counts
}

func (r *run) apiserverCPU() float64 {
	seconds, err := harness.Metric(r.cp.URL+"/metrics", "process_cpu_seconds_total", nil)
	if err != nil {
		r.b.Fatal(err)
	}
	return seconds
}

func (r *run) kcmRequests() float64 {
	count, err := r.kcm.Metric("rest_client_requests_total", nil)
	if err != nil {
		r.b.Fatal(err)
	}
	return count
}

// watchEndpoints calls handle for every added or modified Endpoints in namespace ("" for all)
// matching fieldSelector, from now on, watching again from the last version seen when the
// apiserver ends a watch. The returned function stops it.
func watchEndpoints(b testing.TB, client kubernetes.Interface, namespace, fieldSelector string, handle func(*v1.Endpoints, time.Time)) func() {
	endpoints := client.CoreV1().Endpoints(namespace)
	list, err := endpoints.List(metav1.ListOptions{FieldSelector: fieldSelector, Limit: 1})
	if err != nil {
		b.Fatal(err)
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		rv := list.ResourceVersion
		for {
			w, err := endpoints.Watch(metav1.ListOptions{FieldSelector: fieldSelector, ResourceVersion: rv, AllowWatchBookmarks: true})
			if err != nil {
				b.Errorf("watching Endpoints from %s: %v", rv, err)
				return
			}
			for open := true; open; {
				select {
				case <-stop:
					w.Stop()
					return
				case event, ok := <-w.ResultChan():
					if !ok {
						open = false
						break
					}
					ep, isEndpoints := event.Object.(*v1.Endpoints)
					if !isEndpoints {
						// Only an expired resource version gets here, which the bookmarks should
						// prevent: go on from a fresh list and say that events were missed.
						b.Logf("Endpoints watch (%s): %v event %v; resuming from a new list, events in between are not counted", fieldSelector, event.Type, event.Object)
						w.Stop()
						fresh, err := endpoints.List(metav1.ListOptions{FieldSelector: fieldSelector, Limit: 1})
						if err != nil {
							b.Errorf("listing Endpoints: %v", err)
							return
						}
						rv, open = fresh.ResourceVersion, false
						break
					}
					rv = ep.ResourceVersion
					if event.Type == watch.Added || event.Type == watch.Modified {
						handle(ep, time.Now())
					}
				}
			}
		}
	}()
	return func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		<-done
	}
}

func fileSHA256(b testing.TB, path string) string {
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		b.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Percentiles are the p50, p99 and maximum of sorted values.
func Percentiles(sorted []float64) (p50, p99, max float64) {
	return Percentile(sorted, 0.50), Percentile(sorted, 0.99), Percentile(sorted, 1)
}

// Percentile is the nearest-rank q-quantile of sorted values (q = 1 gives the maximum).
func Percentile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	rank := int(math.Ceil(q*float64(len(sorted)))) - 1
	if rank < 0 {
		rank = 0
	}
	return sorted[rank]
}

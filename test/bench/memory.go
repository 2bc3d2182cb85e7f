package bench

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/idc-lts/kube-1.17/test/harness"
)

// A single start's peak RSS is noise at 13,000 Services: the same binary measured 245 to 304 MB.
// The peak is set in the first second, by the garbage collection that happens to run while the
// startup lists are being decoded: the heap may grow to twice what is live at that moment, and
// what is live then depends on how much of the lists is in flight (GODEBUG=gctrace=1 shows it).
// A run with Config.Starts starts its build that many times on the same Services, each the only
// instance and the leader, and reads each start's peak once it has queued every Service and run
// MemoryHold more; the median of those compares builds.
const (
	// MemoryHold covers the startup pass's first checks of every Service, well past the peak; a
	// build that writes at its rate limit has settled into that pace by then.
	MemoryHold = 10 * time.Second
	// memoryPeriod keeps a periodic resync out of a memory start.
	memoryPeriod = 10 * time.Minute
)

// measureStarts starts the build r.cfg.Starts times and returns each start's peak RSS.
func (r *run) measureStarts(logDir string) []int64 {
	var samples []int64
	r.period = memoryPeriod
	for i := 1; i <= r.cfg.Starts; i++ {
		r.deleteLocks()
		r.kcm = r.startInstance(logDir, fmt.Sprintf("kube-controller-manager-start-%d", i))
		r.waitQueued()
		time.Sleep(MemoryHold)
		if exited, err := r.kcm.Exited(); exited {
			r.b.Fatalf("%s: start %d exited during its memory sample (%v): %s", r.cfg, i, err, fatalLine(r.kcm.Tail(1000)))
		}
		usage, err := ReadProcessUsage(r.kcm.Pid())
		if err != nil {
			r.b.Fatal(err)
		}
		r.kcm.Kill()
		samples = append(samples, usage.PeakRSSBytes)
		r.b.Logf("%s: start %d of %d: peak RSS %.1f MB", r.cfg, i, r.cfg.Starts, float64(usage.PeakRSSBytes)/1e6)
	}
	return samples
}

// waitQueued waits until the endpoint queue has taken every Service once.
func (r *run) waitQueued() {
	limit := r.passLimit()
	err := wait.PollImmediate(250*time.Millisecond, limit, func() (bool, error) {
		if exited, err := r.kcm.Exited(); exited {
			return false, fmt.Errorf("%s exited (%v): %s", r.kcm.Name, err, fatalLine(r.kcm.Tail(1000)))
		}
		adds, _ := r.queue()
		return adds >= float64(r.cfg.Services), nil
	})
	if err != nil {
		r.b.Fatalf("%s: not every Service queued within %v: %v", r.cfg, limit, err)
	}
}

// Median is the middle of samples, or the mean of the two middle ones.
func Median(samples []int64) int64 {
	if len(samples) == 0 {
		return 0
	}
	sorted := append([]int64(nil), samples...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	mid := len(sorted) / 2
	if len(sorted)%2 == 1 {
		return sorted[mid]
	}
	return (sorted[mid-1] + sorted[mid]) / 2
}

// primeQPS is the client rate limit a plane's Endpoints are first written at.
const primeQPS = 1000

// Prime writes the Endpoints of a new plane's Services with the variant's kube-controller-manager
// at primeQPS, so that no run's startup pass has to create them at its own limit: at 30,000
// Services and qps 20 that alone would take 25 minutes. (A build that rewrites every Endpoints
// on each sync still does so in its startup pass; that is what it costs.)
func Prime(b testing.TB, cp *harness.ControlPlane, variant string, services int) {
	start := time.Now()
	r := &run{b: b, cp: cp, cfg: Config{Services: services, QPS: primeQPS, Burst: primeQPS, Variant: variant}, period: memoryPeriod}
	r.deleteLocks()
	r.kcm = r.startInstance(harness.LogDir(b), "kube-controller-manager-prime")
	r.waitStartupPass(0)
	r.kcm.Kill()
	if n := countBenchEndpoints(b, cp); n < services {
		b.Fatalf("priming with %s: %d Endpoints for %d Services after its startup pass", variant, n, services)
	}
	b.Logf("wrote the Endpoints of %d Services with %s at qps %d in %v", services, variant, primeQPS, time.Since(start).Round(time.Second))
}

// countBenchEndpoints counts the Endpoints in the benchmark's namespaces, a page at a time.
func countBenchEndpoints(b testing.TB, cp *harness.ControlPlane) int {
	n := 0
	opts := metav1.ListOptions{Limit: 5000}
	for {
		list, err := cp.Client.CoreV1().Endpoints(metav1.NamespaceAll).List(opts)
		if err != nil {
			b.Fatal(err)
		}
		for _, ep := range list.Items {
			if strings.HasPrefix(ep.Namespace, namespacePrefix) {
				n++
			}
		}
		if opts.Continue = list.Continue; opts.Continue == "" {
			return n
		}
	}
}

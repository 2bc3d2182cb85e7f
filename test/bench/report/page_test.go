package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idc-lts/kube-1.17/test/bench"
)

// results are a stock and a patched run of each case, with figures shaped like the real ones.
func results() []bench.Result {
	var all []bench.Result
	for _, variant := range []string{"stock", "patched"} {
		stock := variant == "stock"
		pick := func(s, p float64) float64 {
			if stock {
				return s
			}
			return p
		}
		base := bench.Result{Config: bench.Config{Services: 13000, QPS: 20, Burst: 30, Variant: variant, Failover: true},
			BinarySHA256: variant + "-sha", ResyncEligible: 12900, DeletionLatencies: []float64{pick(300, 0.005), pick(629, 0.4)},
			P99: pick(629, 0.4), Max: pick(631, 0.7), PeakRSSBytes: 250e6, WindowSeconds: 600, APIServerCPUSeconds: 60,
			APIServerRequests: map[string]float64{"PUT endpoints": pick(13000, 100)}}
		if stock {
			base.ResyncWrites = 12865
		}
		failover := base
		failover.Failover = &bench.FailoverResult{TakeoverSeconds: 14, StartupWrites: int(pick(12865, 0)),
			DeletionLatencies: []float64{14, pick(660, 14.5)}, P99: pick(660, 14.5), Max: pick(662, 14.6)}
		fanOut := base
		fanOut.Config = bench.Config{Services: 13000, QPS: 100, Burst: 120, Variant: variant, Watchers: 500}
		fanOut.FanOut = &bench.FanOutResult{Watchers: 500, Events: int64(pick(6e6, 5e4)), Bytes: int64(pick(3e9, 2e7)),
			Probe: bench.ProbeResult{Requests: 1000, Latencies: []float64{0.002, pick(3, 0.01)}, P99: pick(3, 0.01), Max: pick(61, 0.02),
				Slow: int(pick(40, 0)), Errors: map[string]int{}, FirstErrors: map[string]string{}}}
		if stock {
			fanOut.FanOut.Probe.Errors["504 Timeout"] = 3
			fanOut.FanOut.Probe.FirstErrors["504 Timeout"] = "the server was unable to return a response in the time allotted"
		}
		all = append(all, failover, fanOut)
	}
	return all
}

func TestWritePage(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "benchmarks.md")
	env := bench.Environment{Date: "2026-11-23 10:00 UTC", Machine: "2 cores", ControlPlaneSHA256: map[string]string{"etcd": "etcd-sha"}}
	charts := map[string]string{"Resync": filepath.Join(dir, Charts["Resync"].File)}
	if err := WritePage(path, charts, "make bench", env, results()); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	page := string(data)
	for _, want := range []string{
		"**Resync.** At 13000 headless Services and `--kube-api-qps=20`",
		"**Failover.** With the leader SIGKILLed at 13000 Services",
		"ours wrote 0 and the p99 was 14.5 s, takeover + 500 ms.",
		"**Watch fan-out.** During a resync at 13000 Services and `--kube-api-qps=100` with 500 Endpoints watchers",
		"3 x 504 Timeout",
		"stock kube-apiserver", "stock etcd: `etcd-sha`", "patched kube-controller-manager: `patched-sha`",
		"(benchmarks-resync.png)",
		"In short, stock's probe requests failed or took over 1s with 500 watchers, the fewest measured.",
		"| patched N=13000 qps=20/30 +failover: failover deletion p99 within takeover + 1 s | 14.5 s = takeover 14.0 s + 500 ms | met |",
		"| stock N=13000 qps=100/120 +watchers=500: the incident reproduced, probe requests failing or over 1s | 3 failed, 40 over 1s, max 61.0 s | met |",
		"| patched N=13000 qps=100/120 +watchers=500: no probe request failing or over 1s | 0 failed, 0 over 1s, max 20 ms | met |",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if strings.Contains(page, "benchmarks-failover.png") {
		t.Errorf("the page links a chart that was not written")
	}
	if strings.Contains(page, "**missed**") {
		t.Errorf("a target is missed on figures that meet them all:\n%s", page)
	}
}

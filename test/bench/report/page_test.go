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
			BinarySHA256: variant + "-sha", ResyncEligible: 12900, DeletionLatencies: []float64{pick(300, 0.005), pick(629, 0.04)},
			P99: pick(629, 0.04), Max: pick(631, 0.07), PeakRSSBytes: 250e6, WindowSeconds: 600, APIServerCPUSeconds: 60,
			APIServerRequests: map[string]float64{"PUT endpoints": pick(13000, 100)}}
		if stock {
			base.ResyncWrites = 12865
		}
		failover := base
		failover.Starts = 3
		failover.StartPeakRSSBytes = []int64{int64(pick(250e6, 290e6)), int64(pick(245e6, 255e6)), int64(pick(300e6, 250e6))}
		failover.MedianStartPeakRSSBytes = bench.Median(failover.StartPeakRSSBytes)
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
		handover := base
		handover.Config.Failover, handover.Config.Handover = true, true
		handover.Failover = &bench.FailoverResult{TakeoverSeconds: pick(15.2, 0.3), StartupWrites: int(pick(12865, 0)),
			DeletionLatencies: []float64{0.3, pick(660, 0.5)}, P99: pick(660, 0.5), Max: pick(662, 0.6)}
		small := failover
		small.Services, small.ResyncEligible, small.PeakRSSBytes = 2000, 1900, 100e6
		small.Starts, small.StartPeakRSSBytes, small.MedianStartPeakRSSBytes = 0, nil, 0
		all = append(all, small, failover, handover, fanOut)
	}
	// Stock would not finish at 30,000 within the hour: ours only.
	large := all[len(all)-3]
	large.Services, large.ResyncEligible, large.PeakRSSBytes = 30000, 29900, 500e6
	large.Starts, large.StartPeakRSSBytes, large.MedianStartPeakRSSBytes = 0, nil, 0
	return append(all, large)
}

func TestWritePage(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "benchmarks.md")
	env := bench.Environment{Date: "2026-11-23 10:00 UTC", Machine: "2 cores", ControlPlaneSHA256: map[string]string{"etcd": "etcd-sha"}}
	charts := map[string]string{"Resync": filepath.Join(dir, Charts["Resync"].File)}
	schedulers := []bench.SchedulerHandover{
		{Variant: "stock", TakeoverSeconds: []float64{15.9, 16.4}, Max: 16.4},
		{Variant: "patched", BinarySHA256: "patched-scheduler-sha", TakeoverSeconds: []float64{2.1, 2.4}, Max: 2.4},
	}
	if err := WritePage(path, charts, "make bench", env, results(), schedulers); err != nil {
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
		"ours wrote 0 and the p99 was 14.5 s (max 14.6 s), the takeover's 14.0 s included.",
		"**Watch fan-out.** During a resync at 13000 Services and `--kube-api-qps=100` with 500 Endpoints watchers",
		"3 x 504 Timeout",
		"stock kube-apiserver", "stock etcd: `etcd-sha`", "patched kube-controller-manager: `patched-sha`",
		"(benchmarks-resync.png)",
		"In short, stock's probe requests failed or took over 1s with 500 watchers, the fewest measured.",
		"| patched N=13000 qps=20/30 +failover +starts=3: failover deletion p99 within takeover + 1 s | 14.5 s = takeover 14.0 s + 500 ms | met |",
		"| stock N=13000 qps=100/120 +watchers=500: the incident reproduced, probe requests failing or over 1s | 3 failed, 40 over 1s, max 61.0 s | met |",
		"| patched N=13000 qps=100/120 +watchers=500: no probe request failing or over 1s | 0 failed, 0 over 1s, max 20 ms | met |",
		"| patched N=13000 qps=20/30 +failover +starts=3: resync deletion p99 at most 100 ms | 40 ms | met |",
		"| patched N=13000 qps=20/30 +handover: planned handover of kube-controller-manager, the standby leads at most 3.0 s after SIGTERM | 300 ms | met |",
		"| stock | 15.9 s, 16.4 s | 16.4 s |",
		"patched kube-scheduler: `patched-scheduler-sha`",
		"| patched kube-scheduler: planned handover, the standby leads at most 3.0 s after SIGTERM (the slowest of 2) | 2.4 s | met |",
		"| scaling curve: ours measured at 3 sizes or more, up to at least 30000 Services | 3 sizes [2000 13000 30000] | met |",
		"## Memory",
		"| 13000 | 20/30 +failover +starts=3 | patched | 290, 255, 250 | 255 | +2.0% |",
		"| patched N=13000 qps=20/30 +failover +starts=3: peak RSS, the median of 3 starts, at most 5% above stock's | +2.0% (255 MB against 250 MB) | met |",
		"## Scaling",
		"| patched | 20/30 +failover | 30000 | ",
		"- stock was not run at N=30000 qps=20/30 +failover: its resync alone needs N/qps = 1500 s, and its failover's startup pass as long again.",
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

// One size draws no curve: the page has no scaling section and says the curve target is missed.
func TestOneSizeIsNoCurve(t *testing.T) {
	var one []bench.Result
	for _, r := range results() {
		if r.Services == 13000 {
			one = append(one, r)
		}
	}
	dir := t.TempDir()
	for name, curve := range Curves {
		written, err := curve.Write(filepath.Join(dir, curve.File), one)
		if err != nil || written {
			t.Errorf("%s: written %t (%v) from one size", name, written, err)
		}
	}
	path := filepath.Join(dir, "benchmarks.md")
	if err := WritePage(path, nil, "make bench", bench.Environment{}, one, nil); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	page := string(data)
	if strings.Contains(page, "## Scaling") {
		t.Error("a scaling section from one size")
	}
	if want := "| scaling curve: ours measured at 3 sizes or more, up to at least 30000 Services | 1 sizes [13000] | **missed** |"; !strings.Contains(page, want) {
		t.Errorf("the page lacks %q", want)
	}
}

// Runs at several sizes draw both scaling charts.
func TestCurvesAreDrawnFromSeveralSizes(t *testing.T) {
	dir := t.TempDir()
	for name, curve := range Curves {
		path := filepath.Join(dir, curve.File)
		written, err := curve.Write(path, results())
		if err != nil || !written {
			t.Fatalf("%s: written %t (%v)", name, written, err)
		}
		if info, err := os.Stat(path); err != nil || info.Size() == 0 {
			t.Errorf("%s: %v", name, err)
		}
	}
}

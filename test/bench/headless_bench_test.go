package bench

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/idc-lts/kube-1.17/test/harness"
)

// Settings come from the environment so that `make bench` can be narrowed for a quick look:
//
//	BENCH_SERVICES  Service counts, one control plane each   (default "2000,13000")
//	BENCH_RATES     qps:burst pairs of kube-controller-manager (default "20:30,100:120")
//	BENCH_VARIANTS  builds under _output/bin                 (default "stock,patched")
//	BENCH_DELETIONS pods deleted per run, one every 250 ms   (default 100)
//	BENCH_RESULTS   directory for the runs' JSON results     (default _output/bench)
func setting(name, fallback string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return fallback
}

func atoi(b *testing.B, name, s string) int {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n <= 0 {
		b.Fatalf("%s: %q is not a positive number", name, s)
	}
	return n
}

// BenchmarkHeadlessResync runs every configuration once (use -benchtime=1x): the reported
// metrics are one run's, and the JSON results carry every latency for the report.
func BenchmarkHeadlessResync(b *testing.B) {
	deletions := atoi(b, "BENCH_DELETIONS", setting("BENCH_DELETIONS", "100"))
	resultsDir := setting("BENCH_RESULTS", filepath.Join(harness.RepoRoot(b), "_output", "bench"))
	if err := os.MkdirAll(resultsDir, 0o755); err != nil {
		b.Fatal(err)
	}
	writeJSON(b, filepath.Join(resultsDir, EnvironmentFile), DescribeEnvironment(time.Now()))
	var configs []Config
	for _, rate := range strings.Split(setting("BENCH_RATES", "20:30,100:120"), ",") {
		qps, burst, ok := strings.Cut(rate, ":")
		if !ok {
			b.Fatalf("BENCH_RATES: %q is not qps:burst", rate)
		}
		for _, variant := range strings.Split(setting("BENCH_VARIANTS", "stock,patched"), ",") {
			harness.Binary(b, variant, "kube-controller-manager")
			configs = append(configs, Config{QPS: atoi(b, "BENCH_RATES", qps), Burst: atoi(b, "BENCH_RATES", burst), Variant: variant})
		}
	}

	for _, services := range strings.Split(setting("BENCH_SERVICES", "2000,13000"), ",") {
		n := atoi(b, "BENCH_SERVICES", services)
		b.Run(fmt.Sprintf("services=%d", n), func(b *testing.B) {
			cp := harness.StartControlPlane(b)
			start := time.Now()
			fixtures := CreateServices(b, cp.Client, n)
			b.Logf("created %d headless Services with a Ready pod each in %v", n, time.Since(start).Round(time.Second))
			for i, cfg := range configs {
				cfg.Services = n
				b.Run(fmt.Sprintf("qps=%d/%s", cfg.QPS, cfg.Variant), func(b *testing.B) {
					result := Run(b, cp, fixtures, cfg, i, Options{Deletions: deletions, DeleteInterval: 250 * time.Millisecond})
					b.Logf("%s: resync wrote %d Endpoints in %.1fs; deletion latency p50 %.3fs p99 %.3fs max %.3fs; peak RSS %.1f MB, CPU %.1fs; %.0f apiserver requests in %.0fs; %.1f lock writes/min",
						cfg, result.ResyncWrites, result.ResyncPassSeconds, result.P50, result.P99, result.Max,
						float64(result.PeakRSSBytes)/1e6, result.CPUSeconds, result.APIServerRequestsTotal, result.WindowSeconds,
						result.LeaderElectionWritesPerMinute)
					b.ReportMetric(float64(result.ResyncWrites), "resync-writes")
					b.ReportMetric(result.P50*1000, "p50-ms")
					b.ReportMetric(result.P99*1000, "p99-ms")
					b.ReportMetric(result.Max*1000, "max-ms")
					b.ReportMetric(float64(result.PeakRSSBytes)/1e6, "peak-rss-MB")
					b.ReportMetric(result.CPUSeconds, "cpu-s")
					b.ReportMetric(result.LeaderElectionWritesPerMinute, "lock-writes/min")
					save(b, resultsDir, result)
				})
			}
		})
	}
}

func save(b *testing.B, dir string, result Result) {
	writeJSON(b, filepath.Join(dir, fmt.Sprintf("services-%d_qps-%d_%s.json", result.Services, result.QPS, result.Variant)), result)
}

func writeJSON(b *testing.B, path string, v interface{}) {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(path, append(data, '\n'), 0o644); err != nil {
		b.Fatal(err)
	}
}

package bench

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/idc-lts/kube-1.17/test/harness"
)

// Settings come from the environment so that `make bench` can be narrowed for a quick look:
//
//	BENCH_SERVICES  Service counts, one control plane each       (default DefaultServices)
//	BENCH_RATES     runs: qps:burst of kube-controller-manager,   (default DefaultRuns)
//	                each with options: "+failover" ends the run
//	                by killing the leader with a standby waiting,
//	                "+handover" by stopping it with SIGTERM;
//	                "+watchers=W" runs the resync under W Endpoints
//	                watchers and a probe client; "+starts=K"
//	                first starts the build K times for a memory
//	                sample (memory.go); "+services=N"
//	                runs it at N Services only (adding a control
//	                plane of N) instead of at each BENCH_SERVICES;
//	                "+variant=V" runs it on build V only (a size
//	                at which stock would not finish in the hour)
//	BENCH_VARIANTS  builds under _output/bin                     (default DefaultVariants)
//	BENCH_DELETIONS pods deleted per phase, one every 250 ms     (default DefaultDeletions)
//	BENCH_SCHEDULER_HANDOVERS planned handovers of kube-scheduler
//	                per build (BenchmarkSchedulerHandover)       (default DefaultSchedulerHandovers)
//	BENCH_RESULTS   directory for the runs' JSON results         (default _output/bench)
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
	deletions := atoi(b, "BENCH_DELETIONS", setting("BENCH_DELETIONS", DefaultDeletions))
	resultsDir := setting("BENCH_RESULTS", filepath.Join(harness.OutputDir(b), "bench"))
	if err := os.MkdirAll(resultsDir, 0o755); err != nil {
		b.Fatal(err)
	}
	env := DescribeEnvironment(time.Now())
	env.ControlPlaneSHA256 = map[string]string{}
	for _, name := range []string{"kube-apiserver", "etcd"} {
		env.ControlPlaneSHA256[name] = fileSHA256(b, harness.Binary(b, "stock", name))
	}
	writeJSON(b, filepath.Join(resultsDir, EnvironmentFile), env)
	var configs []Config
	// planes are the control planes to fill: BENCH_SERVICES, whose each run without +services
	// uses, then those that runs with +services name.
	var planes []int
	for _, services := range strings.Split(setting("BENCH_SERVICES", DefaultServices), ",") {
		planes = append(planes, atoi(b, "BENCH_SERVICES", services))
	}
	everyRunAt := slices.Clone(planes)
	for _, spec := range strings.Split(setting("BENCH_RATES", DefaultRuns), ",") {
		run, only := parseRun(b, spec)
		if run.Services > 0 && !slices.Contains(planes, run.Services) {
			planes = append(planes, run.Services)
		}
		for _, variant := range strings.Split(setting("BENCH_VARIANTS", DefaultVariants), ",") {
			if only != "" && variant != only {
				continue
			}
			harness.Binary(b, variant, "kube-controller-manager")
			run.Variant = variant
			configs = append(configs, run)
		}
	}

	for _, n := range planes {
		b.Run(fmt.Sprintf("services=%d", n), func(b *testing.B) {
			cp := harness.StartControlPlane(b)
			start := time.Now()
			fixtures := CreateServices(b, cp.Client, n)
			b.Logf("created %d headless Services with a Ready pod each in %v", n, time.Since(start).Round(time.Second))
			i := 0
			for _, cfg := range configs {
				if cfg.Services != 0 && cfg.Services != n || cfg.Services == 0 && !slices.Contains(everyRunAt, n) {
					continue
				}
				if i == 0 {
					Prime(b, cp, cfg.Variant, n)
				}
				cfg.Services = n
				b.Run(strings.ReplaceAll(fmt.Sprintf("qps=%d%s/%s", cfg.QPS, cfg.Extras(), cfg.Variant), " ", ""), func(b *testing.B) {
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
					if result.MedianStartPeakRSSBytes > 0 {
						b.Logf("%s: peak RSS of %d starts: median %.1f MB", cfg, len(result.StartPeakRSSBytes), float64(result.MedianStartPeakRSSBytes)/1e6)
						b.ReportMetric(float64(result.MedianStartPeakRSSBytes)/1e6, "median-start-peak-rss-MB")
					}
					b.ReportMetric(result.CPUSeconds, "cpu-s")
					b.ReportMetric(result.LeaderElectionWritesPerMinute, "lock-writes/min")
					if f := result.FanOut; f != nil {
						b.Logf("%s: %d watchers received %d events, %.1f MB; probe: %d requests, p50 %.3fs p99 %.3fs max %.3fs, %d over %v, errors %v",
							cfg, f.Watchers, f.Events, float64(f.Bytes)/1e6, f.Probe.Requests, f.Probe.P50, f.Probe.P99, f.Probe.Max, f.Probe.Slow, SlowRequest, f.Probe.Errors)
						b.ReportMetric(f.Probe.P99*1000, "probe-p99-ms")
						b.ReportMetric(float64(f.Probe.ErrorCount()), "probe-errors")
					}
					if f := result.Failover; f != nil {
						b.Logf("%s: failover: takeover %.1fs; new leader's startup sync wrote %d Endpoints (%0.f PUTs) in %.1fs; deletion latency p50 %.3fs p99 %.3fs max %.3fs",
							cfg, f.TakeoverSeconds, f.StartupWrites, f.StartupPuts, f.StartupPassSeconds, f.P50, f.P99, f.Max)
						b.ReportMetric(f.TakeoverSeconds, "takeover-s")
						b.ReportMetric(float64(f.StartupWrites), "failover-writes")
						b.ReportMetric(f.P99*1000, "failover-p99-ms")
					}
					save(b, resultsDir, result)
				})
				i++
			}
		})
	}
}

// parseRun reads one BENCH_RATES entry: qps:burst, then +failover or +handover, +watchers=W,
// +starts=K, +services=N and +variant=V in any order. It returns the run and the only build it is for, if
// it names one.
func parseRun(b *testing.B, spec string) (cfg Config, only string) {
	fields := strings.Split(strings.TrimSpace(spec), "+")
	qps, burst, ok := strings.Cut(fields[0], ":")
	if !ok {
		b.Fatalf("BENCH_RATES: %q does not start with qps:burst", spec)
	}
	cfg = Config{QPS: atoi(b, "BENCH_RATES", qps), Burst: atoi(b, "BENCH_RATES", burst)}
	for _, option := range fields[1:] {
		switch name, value, _ := strings.Cut(option, "="); name {
		case "failover":
			cfg.Failover = true
		case "handover":
			cfg.Failover, cfg.Handover = true, true
		case "watchers":
			cfg.Watchers = atoi(b, "BENCH_RATES watchers", value)
		case "starts":
			cfg.Starts = atoi(b, "BENCH_RATES starts", value)
		case "services":
			cfg.Services = atoi(b, "BENCH_RATES services", value)
		case "variant":
			if value == "" {
				b.Fatalf("BENCH_RATES: %q: +variant= names no build", spec)
			}
			only = value
		default:
			b.Fatalf("BENCH_RATES: %q: unknown option %q (want +failover, +handover, +watchers=W, +starts=K, +services=N or +variant=V)", spec, option)
		}
	}
	return cfg, only
}

func save(b *testing.B, dir string, result Result) {
	name := strings.NewReplacer(" +", "_", "=", "-").Replace(fmt.Sprintf("services-%d_qps-%d%s_%s.json", result.Services, result.QPS, result.Extras(), result.Variant))
	writeJSON(b, filepath.Join(dir, name), result)
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

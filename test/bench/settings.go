package bench

// The defaults of make bench's settings (BENCH_* in the environment; headless_bench_test.go reads
// them), kept here so that the report page quotes what the code runs.
const (
	// DefaultServices are the Service counts, one control plane each.
	DefaultServices = "13000"
	// DefaultRuns are the runs `make bench` makes, at the incident's default rate unless said:
	//   - the resync and a failover (SIGKILL) at 13,000 Services, after nine memory starts of
	//     each build (their median peak RSS compares the builds), and at 2,000 and 30,000 for the
	//     scaling curve; stock not at 30,000, where its two passes would take 50 minutes (its
	//     N/qps bound stands in for it on the page);
	//   - a planned handover (SIGTERM) at 13,000 for ours, and at 2,000 beside stock, whose
	//     handover is a failover whatever N is (it does not release its lease);
	//   - the resync's watch fan-out at the rate the incident's operators raised it to, with 500
	//     watchers (nothing to see on 2 cores) and 5,000 (requests over 1 s), at 2,000 Services:
	//     the apiserver paces the writes under that load, so 13,000 would take ten times as long.
	DefaultRuns = "20:30+failover+starts=9,20:30+handover+variant=patched," +
		"20:30+failover+services=2000,20:30+handover+services=2000," +
		"20:30+failover+services=30000+variant=patched," +
		"100:120+watchers=500+services=2000,100:120+watchers=5000+services=2000"
	// DefaultVariants are the builds under _output/bin that each run measures.
	DefaultVariants = "stock,patched"
	// DefaultDeletions is the number of pods deleted per phase, one every 250 ms.
	DefaultDeletions = "100"
	// DefaultSchedulerHandovers is how many planned handovers of kube-scheduler each build makes.
	DefaultSchedulerHandovers = "5"
)

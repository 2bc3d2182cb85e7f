package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idc-lts/kube-1.17/test/harness"
)

// BenchmarkSchedulerHandover makes BENCH_SCHEDULER_HANDOVERS planned handovers of each build's
// kube-scheduler (use -benchtime=1x) and saves them beside the resync's results.
func BenchmarkSchedulerHandover(b *testing.B) {
	n := atoi(b, "BENCH_SCHEDULER_HANDOVERS", setting("BENCH_SCHEDULER_HANDOVERS", DefaultSchedulerHandovers))
	resultsDir := setting("BENCH_RESULTS", filepath.Join(harness.OutputDir(b), "bench"))
	if err := os.MkdirAll(resultsDir, 0o755); err != nil {
		b.Fatal(err)
	}
	for _, variant := range strings.Split(setting("BENCH_VARIANTS", DefaultVariants), ",") {
		b.Run(variant, func(b *testing.B) {
			cp := harness.StartControlPlane(b)
			result := MeasureSchedulerHandovers(b, cp, variant, n)
			b.ReportMetric(result.Max, "max-takeover-s")
			writeJSON(b, filepath.Join(resultsDir, fmt.Sprintf("%s%s.json", SchedulerHandoverPrefix, variant)), result)
		})
	}
}

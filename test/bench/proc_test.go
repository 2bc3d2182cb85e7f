package bench

import (
	"os"
	"testing"
	"time"
)

func TestReadProcessUsageOfThisProcess(t *testing.T) {
	// Burn some CPU and memory so that both readings are clearly non-zero.
	deadline := time.Now().Add(300 * time.Millisecond)
	buf := make([]byte, 64<<20)
	for i := 0; time.Now().Before(deadline); i = (i + 4096) % len(buf) {
		buf[i]++
	}
	usage, err := ReadProcessUsage(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if usage.PeakRSSBytes < 64<<20 {
		t.Errorf("peak RSS %d bytes, want at least the 64 MiB just touched", usage.PeakRSSBytes)
	}
	if usage.CPUSeconds < 0.1 {
		t.Errorf("CPU %.2fs, want at least 0.1s after 0.3s of busy loop", usage.CPUSeconds)
	}
}

func TestReadProcessUsageOfNoProcess(t *testing.T) {
	if _, err := ReadProcessUsage(1 << 30); err == nil {
		t.Error("want an error for a pid that cannot exist")
	}
}

func TestPercentile(t *testing.T) {
	sorted := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for _, tc := range []struct {
		q    float64
		want float64
	}{
		{0.5, 5}, {0.99, 10}, {1, 10}, {0.1, 1}, {0, 1},
	} {
		if got := Percentile(sorted, tc.q); got != tc.want {
			t.Errorf("Percentile(1..10, %v) = %v, want %v", tc.q, got, tc.want)
		}
	}
}

package bench

import (
	"os"
	"syscall"
	"testing"
	"time"
)

func TestReadProcessUsageOfThisProcess(t *testing.T) {
	// Touch every page of 64 MiB, then burn CPU until the kernel's own account (getrusage) says
	// 0.2 s: a deadline on the wall clock is not CPU on a loaded machine (make test runs packages
	// in parallel), and a busy loop cut short by it may not have touched every page.
	buf := make([]byte, 64<<20)
	for i := 0; i < len(buf); i += 4096 {
		buf[i] = 1
	}
	giveUp := time.Now().Add(30 * time.Second)
	for i := 0; cpuSeconds(t) < 0.2 && time.Now().Before(giveUp); i = (i + 4096) % len(buf) {
		for j := 0; j < 1<<16; j++ {
			buf[(i+j*4096)%len(buf)]++
		}
	}
	usage, err := ReadProcessUsage(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if usage.PeakRSSBytes < 64<<20 {
		t.Errorf("peak RSS %d bytes, want at least the 64 MiB just touched", usage.PeakRSSBytes)
	}
	if usage.CPUSeconds < 0.1 {
		t.Errorf("CPU %.2fs, want at least 0.1s after getrusage counted %.2fs", usage.CPUSeconds, cpuSeconds(t))
	}
}

// cpuSeconds is this process's user and system time as getrusage reports it.
func cpuSeconds(t *testing.T) float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
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

package bench

import (
	"fmt"

	"github.com/prometheus/procfs"
)

// ProcessUsage is what the kernel accounted to a process so far.
type ProcessUsage struct {
	// PeakRSSBytes is VmHWM, the largest resident set the process has had.
	PeakRSSBytes int64
	// CPUSeconds is user plus system time.
	CPUSeconds float64
}

// ReadProcessUsage reads /proc/<pid>/status and /proc/<pid>/stat of a running process.
func ReadProcessUsage(pid int) (ProcessUsage, error) {
	proc, err := procfs.NewProc(pid)
	if err != nil {
		return ProcessUsage{}, err
	}
	status, err := proc.NewStatus()
	if err != nil {
		return ProcessUsage{}, err
	}
	if status.VmHWM == 0 {
		return ProcessUsage{}, fmt.Errorf("/proc/%d/status has no VmHWM", pid)
	}
	stat, err := proc.Stat()
	if err != nil {
		return ProcessUsage{}, err
	}
	return ProcessUsage{PeakRSSBytes: int64(status.VmHWM), CPUSeconds: stat.CPUTime()}, nil
}

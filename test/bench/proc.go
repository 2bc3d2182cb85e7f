package bench

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat's CPU times: 100 on every Linux
// architecture we build for.
const clockTicks = 100

// ProcessUsage is what the kernel accounted to a process so far.
type ProcessUsage struct {
	// PeakRSSBytes is VmHWM, the largest resident set the process has had.
	PeakRSSBytes int64
	// CPUSeconds is user plus system time.
	CPUSeconds float64
}

// ReadProcessUsage reads /proc/<pid>/status and /proc/<pid>/stat of a running process.
func ReadProcessUsage(pid int) (ProcessUsage, error) {
	var usage ProcessUsage
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return usage, err
	}
	for _, line := range strings.Split(string(status), "\n") {
		if fields := strings.Fields(line); len(fields) == 3 && fields[0] == "VmHWM:" && fields[2] == "kB" {
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			if err != nil {
				return usage, fmt.Errorf("/proc/%d/status: %q: %v", pid, line, err)
			}
			usage.PeakRSSBytes = kb * 1024
		}
	}
	if usage.PeakRSSBytes == 0 {
		return usage, fmt.Errorf("/proc/%d/status has no VmHWM", pid)
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return usage, err
	}
	// The command name (field 2) may hold spaces; count fields after its closing parenthesis.
	end := strings.LastIndexByte(string(stat), ')')
	fields := strings.Fields(string(stat)[end+1:])
	// utime and stime are fields 14 and 15 of stat, so 12 and 13 after the name.
	if end < 0 || len(fields) < 13 {
		return usage, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	for _, field := range fields[11:13] {
		ticks, err := strconv.ParseInt(field, 10, 64)
		if err != nil {
			return usage, fmt.Errorf("/proc/%d/stat: %v", pid, err)
		}
		usage.CPUSeconds += float64(ticks) / clockTicks
	}
	return usage, nil
}

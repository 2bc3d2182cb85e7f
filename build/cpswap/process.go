package cpswap

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// clockTicks is USER_HZ, the unit of a process's start time in /proc/<pid>/stat (100 on Linux).
const clockTicks = 100

// ProcessStartedSince waits until a process named comm (as /proc/<pid>/comm shows it) started at
// or after since: proof that the kubelet restarted the static pod from the new manifest, since the
// old process keeps answering health checks until the kubelet replaces it.
func ProcessStartedSince(comm string, since time.Time, interval time.Duration) Verifier {
	return func(ctx context.Context) error {
		for {
			started, err := newestStart(comm)
			if err == nil && !started.Before(since.Truncate(time.Second)) {
				return nil
			}
			select {
			case <-ctx.Done():
				if err != nil {
					return fmt.Errorf("timed out waiting for a new %s process: %v", comm, err)
				}
				return fmt.Errorf("timed out waiting for a new %s process: the newest started %s, before the manifest changed", comm, started.Format(time.RFC3339))
			case <-time.After(interval):
			}
		}
	}
}

func bootTime() (time.Time, error) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return time.Time{}, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "btime "); ok {
			secs, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return time.Unix(secs, 0), err
		}
	}
	return time.Time{}, fmt.Errorf("no btime in /proc/stat")
}

// newestStart returns the start time of the newest process named comm.
func newestStart(comm string) (time.Time, error) {
	boot, err := bootTime()
	if err != nil {
		return time.Time{}, err
	}
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var newest time.Time
	for _, path := range stats {
		data, err := os.ReadFile(path)
		if err != nil {
			continue // the process ended
		}
		// pid (comm) state ... field 22 is starttime; comm may contain spaces and parentheses.
		s := string(data)
		lparen, rparen := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if lparen < 0 || rparen < lparen || s[lparen+1:rparen] != truncateComm(comm) {
			continue
		}
		fields := strings.Fields(s[rparen+1:])
		if len(fields) < 20 {
			continue
		}
		ticks, err := strconv.ParseInt(fields[19], 10, 64)
		if err != nil {
			continue
		}
		started := boot.Add(time.Duration(ticks) * time.Second / clockTicks)
		if started.After(newest) {
			newest = started
		}
	}
	if newest.IsZero() {
		return newest, fmt.Errorf("no %s process running", comm)
	}
	return newest, nil
}

// truncateComm mirrors the kernel's 15-character limit on a process's comm.
func truncateComm(comm string) string {
	if len(comm) > 15 {
		return comm[:15]
	}
	return comm
}

// All runs verifiers in order; each gets what is left of ctx.
func All(verifiers ...Verifier) Verifier {
	return func(ctx context.Context) error {
		for _, v := range verifiers {
			if err := v(ctx); err != nil {
				return err
			}
		}
		return nil
	}
}

package bench

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/idc-lts/kube-1.17/test/harness"
)

// SchedulerHandover is the planned handover of kube-scheduler, measured several times in a row:
// a leader and a standby of one build run, the leader is stopped with SIGTERM (the kubelet
// replacing its static pod), the standby takes over and a new standby starts. Unlike the
// endpoint controller's, the scheduler's handover does not grow with the number of Services, so
// it runs on a control plane of its own, without them.
type SchedulerHandover struct {
	Variant      string `json:"variant"`
	BinarySHA256 string `json:"binarySHA256"`
	// TakeoverSeconds are, for each handover, the time from the leader's SIGTERM until the standby
	// logged that it acquired the lease.
	TakeoverSeconds []float64 `json:"takeoverSeconds"`
	Max             float64   `json:"maxSeconds"`
}

// SchedulerHandoverPrefix names the results of BenchmarkSchedulerHandover: <prefix><variant>.json.
const SchedulerHandoverPrefix = "scheduler-handover_"

// schedulerTakeoverLimit bounds one takeover: a lease that is not released expires after 15 s,
// and the standby takes it at its next try, up to 2 jittered retry periods later.
const schedulerTakeoverLimit = 60 * time.Second

// MeasureSchedulerHandovers makes n planned handovers of the variant's kube-scheduler on cp.
func MeasureSchedulerHandovers(b testing.TB, cp *harness.ControlPlane, variant string, n int) SchedulerHandover {
	result := SchedulerHandover{Variant: variant, BinarySHA256: fileSHA256(b, harness.Binary(b, variant, harness.KubeScheduler))}
	logDir := harness.LogDir(b)
	start := func(i int) *harness.Component {
		return harness.StartComponent(b, cp, harness.ComponentOptions{Component: harness.KubeScheduler, Variant: variant,
			Name: fmt.Sprintf("kube-scheduler-%d", i), LogDir: logDir, Args: []string{"--leader-elect=true"}})
	}
	leader := start(0)
	waitAcquired(b, leader, schedulerTakeoverLimit)
	for i := 1; i <= n; i++ {
		standby := start(i)
		// Long enough for the standby to have tried once and found the lease held.
		time.Sleep(3 * time.Second)
		if standby.CountLogLines(acquiredLine) > 0 {
			b.Fatalf("%s: TWO LEADERS: %s acquired the lease while %s led", variant, standby.Name, leader.Name)
		}
		if err := syscall.Kill(leader.Pid(), syscall.SIGTERM); err != nil {
			b.Fatalf("%s: SIGTERM to %s: %v", variant, leader.Name, err)
		}
		stopped := time.Now()
		acquired := waitAcquired(b, standby, schedulerTakeoverLimit)
		takeover := acquired.Sub(stopped).Seconds()
		result.TakeoverSeconds = append(result.TakeoverSeconds, takeover)
		if takeover > result.Max {
			result.Max = takeover
		}
		b.Logf("%s kube-scheduler: handover %d of %d: the standby led %.1f s after SIGTERM", variant, i, n, takeover)
		leader.Kill()
		leader = standby
	}
	leader.Kill()
	return result
}

// waitAcquired returns when c logs that it acquired its lease.
func waitAcquired(b testing.TB, c *harness.Component, limit time.Duration) time.Time {
	b.Helper()
	var at time.Time
	err := wait.PollImmediate(50*time.Millisecond, limit, func() (bool, error) {
		if exited, err := c.Exited(); exited {
			return false, fmt.Errorf("%s exited (%v): %s", c.Name, err, fatalLine(c.Tail(1000)))
		}
		at = c.FirstLogTime(acquiredLine)
		return !at.IsZero(), nil
	})
	if err != nil {
		b.Fatalf("%s did not lead within %v: %v", c.Name, limit, err)
	}
	return at
}

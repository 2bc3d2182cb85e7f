package bench

import (
	"syscall"
	"time"

	"github.com/idc-lts/kube-1.17/test/harness"
)

// FailoverResult is what a run measured after killing its leader with a standby waiting.
type FailoverResult struct {
	// TakeoverSeconds is from the leader's SIGKILL (SIGTERM for a handover) until the standby
	// logged that it acquired the lock: the old lease running out, or its release, plus up to one
	// retry period.
	TakeoverSeconds float64 `json:"takeoverSeconds"`
	// StartupWrites counts Endpoints writes from the kill until the new leader's startup sync
	// drained, leaving out the StartupEligible = Services - Deletions Services whose pods the
	// failover deleted; StartupPuts is the apiserver's count of Endpoints PUTs in that window.
	StartupWrites   int     `json:"startupWrites"`
	StartupEligible int     `json:"startupEligible"`
	StartupPuts     float64 `json:"startupPuts"`
	// ReadySeconds is from the kill until the new leader's endpoint controller had its caches
	// synced (listed every Service, pod and Endpoints) and could act.
	ReadySeconds float64 `json:"readySeconds"`
	// StartupPassSeconds is from the takeover until the new leader's queue drained.
	StartupPassSeconds float64 `json:"startupPassSeconds"`
	// DeletionLatencies, sorted, in seconds: pod deleted -> its address gone from Endpoints, for
	// pods deleted one every DeleteInterval from the kill on.
	DeletionLatencies []float64 `json:"deletionLatenciesSeconds"`
	P50               float64   `json:"p50Seconds"`
	P99               float64   `json:"p99Seconds"`
	Max               float64   `json:"maxSeconds"`
	// WindowSeconds is from the kill until the last deleted address left and the queue drained.
	WindowSeconds float64 `json:"windowSeconds"`
}

const (
	// acquiredLine is what client-go's leader election logs when it takes the lock.
	acquiredLine = "successfully acquired lease"
	// cachesSyncedLine is what the endpoint controller logs when its informers have listed.
	cachesSyncedLine = "Caches are synced for endpoint"
)

// startStandby starts a second instance of the build under test, with the same flags, once the
// first one leads: it waits for the lock as a second master's does.
func (r *run) startStandby(logDir string) *harness.Component {
	standby := r.startInstance(logDir, "kube-controller-manager-standby")
	time.Sleep(3 * time.Second)
	if !standby.FirstLogTime(acquiredLine).IsZero() {
		r.b.Fatalf("%s: the standby acquired the lock while the leader was alive", r.cfg)
	}
	return standby
}

// measureFailover kills the leader (SIGTERM for a handover), deletes pods one every opts.DeleteInterval from that moment,
// and waits until the standby has taken over, drained its startup sync and removed every
// deleted address.
func (r *run) measureFailover(standby *harness.Component, slot int, opts Options) *FailoverResult {
	b := r.b
	d := r.watchDeletions(slot, opts)
	putsBefore := r.apiserverRequests()["PUT endpoints"]

	leader := r.kcm
	r.kcm = standby
	// A stock standby starts no controller before it leads, and its queue counts from zero; one
	// whose endpoint controller stands by (patch 0018) has queued every Service already.
	baseline, _ := r.queue()
	killedAt := time.Now()
	if r.cfg.Handover {
		if err := syscall.Kill(leader.Pid(), syscall.SIGTERM); err != nil {
			b.Fatalf("%s: SIGTERM to the leader: %v", r.cfg, err)
		}
	} else {
		leader.Kill()
	}
	d.start()

	var res FailoverResult
	var acquiredAt time.Time
	drainedAt, err := r.waitPass(d, baseline, func() (bool, error) {
		if acquiredAt.IsZero() {
			acquiredAt = r.kcm.FirstLogTime(acquiredLine)
		}
		return !acquiredAt.IsZero(), nil
	})
	if err != nil {
		b.Fatalf("%s: failover not over after %v: lock taken: %v, startup sync drained: %v, %d deleted addresses still in Endpoints: %v",
			r.cfg, r.passLimit(), !acquiredAt.IsZero(), !drainedAt.IsZero(), d.outstanding(), err)
	}
	res.StartupPassSeconds = drainedAt.Sub(acquiredAt).Seconds()
	res.WindowSeconds = time.Since(killedAt).Seconds()
	res.TakeoverSeconds = acquiredAt.Sub(killedAt).Seconds()
	// A standby endpoint controller (patch 0018) logs it while it waits, and again when it leads.
	if ready := r.kcm.FirstLogTimeAfter(cachesSyncedLine, killedAt); !ready.IsZero() {
		res.ReadySeconds = ready.Sub(killedAt).Seconds()
	}
	res.StartupWrites, res.DeletionLatencies = d.finish()
	res.StartupEligible = r.cfg.Services - opts.Deletions
	res.StartupPuts = r.apiserverRequests()["PUT endpoints"] - putsBefore
	res.P50, res.P99, res.Max = Percentiles(res.DeletionLatencies)
	return &res
}

// Package diagnoserun runs cpswap diagnose's observation beside a regression suite (it cannot live in
// test/harness: pkg/cpswap's tests import the harness, and pkg/diagnose imports pkg/cpswap).
package diagnoserun

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/idc-lts/kube-1.17/pkg/diagnose"
	"github.com/idc-lts/kube-1.17/test/harness"
)

// Start runs cpswap diagnose's observation (pkg/diagnose.Run) against the control plane
// in the background and returns once its window has opened (its watches synced), so that what
// the test does next falls inside it. finish ends the window (at once if early, else when
// o.Window is over) and returns the report; the test's end does too.
func Start(t testing.TB, cp *harness.ControlPlane, o diagnose.Options) (finish func(early bool) (*diagnose.Report, error)) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	opened := &firstWrite{opened: make(chan struct{})}
	o.Progress = opened
	done := make(chan struct{})
	var report *diagnose.Report
	var err error
	go func() {
		defer close(done)
		report, err = diagnose.Run(ctx, cp.Config, o)
	}()
	t.Cleanup(func() { cancel(); <-done })
	select {
	case <-opened.opened:
	case <-done:
		t.Fatalf("cpswap diagnose: %v", err)
	case <-time.After(2 * time.Minute):
		t.Fatal("cpswap diagnose's watches did not sync within 2 minutes")
	}
	return func(early bool) (*diagnose.Report, error) {
		if early {
			cancel()
		}
		<-done
		return report, err
	}
}

// firstWrite closes opened at the first write: Run writes its progress line when the window opens.
type firstWrite struct {
	once   sync.Once
	opened chan struct{}
}

func (w *firstWrite) Write(p []byte) (int, error) {
	w.once.Do(func() { close(w.opened) })
	return len(p), nil
}

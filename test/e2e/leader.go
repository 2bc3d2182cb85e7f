package e2e

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/idc-lts/kube-1.17/test/harness"
	"github.com/idc-lts/kube-1.17/test/kubeadmnode"
)

// waitRenewedBy waits until the lock names a holder accepted by want and that holder renews it
// (a later renewTime than first seen): a leader that acts, not a stale record.
func waitRenewedBy(ctx context.Context, client kubernetes.Interface, read harness.LockReader, name string, want func(holder string) bool) (harness.LockRecord, error) {
	var first harness.LockRecord
	var result harness.LockRecord
	err := kubeadmnode.WaitFor(ctx, time.Second, func() (bool, error) {
		r, err := read(ctx, client, name)
		if err != nil {
			return false, err
		}
		if !r.Found || r.Holder == "" || !want(r.Holder) {
			first = harness.LockRecord{}
			return false, fmt.Errorf("%s is held by %q", name, r.Holder)
		}
		if first.Holder != r.Holder {
			first = r
			return false, fmt.Errorf("%s: waiting for %q to renew", name, r.Holder)
		}
		result = r
		return r.RenewTime.After(first.RenewTime), fmt.Errorf("%s: %q has not renewed since %v", name, r.Holder, first.RenewTime)
	})
	return result, err
}

// unwritten checks that nobody writes the lock object for d (several retry periods).
func unwritten(ctx context.Context, client kubernetes.Interface, read harness.LockReader, name string, d time.Duration) error {
	before, err := read(ctx, client, name)
	if err != nil {
		return err
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
	}
	after, err := read(ctx, client, name)
	if err != nil {
		return err
	}
	if after.ResourceVersion != before.ResourceVersion {
		return fmt.Errorf("%s was written within %v: holder %q renewed at %v", name, d, after.Holder, after.RenewTime)
	}
	return nil
}

// handover is what a component's Lease went through while its instance was replaced.
type handover struct {
	// lastRenewal is the old holder's last renewTime before it let go; released says whether it
	// wrote the Lease with no holder (patch 0028) instead of leaving it to expire.
	lastRenewal time.Time
	released    bool
	// newHolder and acquired are the next holder and its acquireTime.
	newHolder string
	acquired  time.Time
}

// watchHandover watches a component's Lease, held by oldHolder, until the returned function is
// called, which returns the handover seen by then.
func watchHandover(ctx context.Context, client kubernetes.Interface, name, oldHolder string) (func() (handover, error), error) {
	w, err := client.CoordinationV1().Leases("kube-system").Watch(metav1.ListOptions{FieldSelector: "metadata.name=" + name})
	if err != nil {
		return nil, err
	}
	var h handover
	done := make(chan struct{})
	go func() {
		defer close(done)
		for event := range w.ResultChan() {
			lease, ok := event.Object.(*coordinationv1.Lease)
			if !ok {
				continue
			}
			holder := ""
			if lease.Spec.HolderIdentity != nil {
				holder = *lease.Spec.HolderIdentity
			}
			switch {
			case holder == oldHolder && lease.Spec.RenewTime != nil && h.newHolder == "":
				h.lastRenewal = lease.Spec.RenewTime.Time
			case holder == "" && h.newHolder == "":
				h.released = true
			case holder != oldHolder && holder != "" && h.newHolder == "":
				h.newHolder = holder
				if lease.Spec.AcquireTime != nil {
					h.acquired = lease.Spec.AcquireTime.Time
				}
			}
		}
	}()
	return func() (handover, error) {
		w.Stop()
		<-done
		if h.newHolder == "" {
			return h, fmt.Errorf("Lease kube-system/%s: no holder after %s", name, oldHolder)
		}
		return h, nil
	}, nil
}

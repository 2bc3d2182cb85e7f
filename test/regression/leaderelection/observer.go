// Package leaderelection is the regression suite for leader election on Endpoints (patch
// "leaderelection: default to the leases lock"): the churn it caused, and the migration between
// stock (endpointsleases) and patched (leases) instances without two leaders.
package leaderelection

import (
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/idc-lts/kube-1.17/test/harness"
)

// write is one change to a lock object in kube-system that a watcher saw.
type write struct {
	at     time.Time
	kind   string // "Endpoints" or "Lease"
	name   string
	holder string
	renew  time.Time
}

// observer records every write to Endpoints and Leases in kube-system, as any Endpoints watcher
// (kube-proxy, CNI agents) would receive them.
type observer struct {
	mu     sync.Mutex
	writes []write
}

func observeKubeSystem(t *testing.T, client kubernetes.Interface) *observer {
	t.Helper()
	o := &observer{}
	endpoints, err := client.CoreV1().Endpoints(metav1.NamespaceSystem).Watch(metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	leases, err := client.CoordinationV1().Leases(metav1.NamespaceSystem).Watch(metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(endpoints.Stop)
	t.Cleanup(leases.Stop)
	go o.record(endpoints)
	go o.record(leases)
	return o
}

func (o *observer) record(w watch.Interface) {
	for event := range w.ResultChan() {
		if event.Type != watch.Added && event.Type != watch.Modified {
			continue
		}
		seen := write{at: time.Now()}
		var record harness.LockRecord
		switch obj := event.Object.(type) {
		case *v1.Endpoints:
			seen.kind, seen.name = "Endpoints", obj.Name
			// An annotation that does not parse is a write without a holder.
			record, _ = harness.EndpointsRecord(obj)
		case *coordinationv1.Lease:
			seen.kind, seen.name = "Lease", obj.Name
			record = harness.LeaseRecord(obj)
		default:
			continue
		}
		seen.holder, seen.renew = record.Holder, record.RenewTime
		o.mu.Lock()
		o.writes = append(o.writes, seen)
		o.mu.Unlock()
	}
}

// since returns the writes of kind (and name, if not empty) seen at or after from.
func (o *observer) since(from time.Time, kind, name string) []write {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []write
	for _, w := range o.writes {
		if !w.at.Before(from) && w.kind == kind && (name == "" || w.name == name) {
			out = append(out, w)
		}
	}
	return out
}

// holders returns the successive distinct holders of a lock object, in the order seen.
func (o *observer) holders(kind, name string) []string {
	var out []string
	for _, w := range o.since(time.Time{}, kind, name) {
		if w.holder != "" && (len(out) == 0 || out[len(out)-1] != w.holder) {
			out = append(out, w.holder)
		}
	}
	return out
}

// waitHolders waits up to timeout until the lock object has had n successive holders, and
// returns its holders as then seen.
func (o *observer) waitHolders(kind, name string, n int, timeout time.Duration) []string {
	deadline := time.Now().Add(timeout)
	for {
		holders := o.holders(kind, name)
		if len(holders) >= n || time.Now().After(deadline) {
			return holders
		}
		time.Sleep(100 * time.Millisecond)
	}
}

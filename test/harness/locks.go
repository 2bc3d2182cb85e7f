package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// LockRecord is one leader-election lock object in kube-system as last written: its holder,
// when, and the object's resourceVersion (which changes on every write). Found is false when
// the object does not exist.
type LockRecord struct {
	Holder                 string
	AcquireTime, RenewTime time.Time
	ResourceVersion        string
	Found                  bool
}

// LockReader reads a component's lock of one kind.
type LockReader func(ctx context.Context, client kubernetes.Interface, name string) (LockRecord, error)

// EndpointsLock reads the leader record a 1.17 component keeps in the annotation of its
// kube-system Endpoints (the "endpoints" half of "endpointsleases", stock's lock; ours writes
// the Lease alone).
func EndpointsLock(ctx context.Context, client kubernetes.Interface, name string) (LockRecord, error) {
	ep, err := client.CoreV1().Endpoints("kube-system").Get(name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return LockRecord{}, nil
	}
	if err != nil {
		return LockRecord{}, err
	}
	return EndpointsRecord(ep)
}

// EndpointsRecord is the lock record an Endpoints object's leader annotation holds (no holder
// when it has none).
func EndpointsRecord(ep *v1.Endpoints) (LockRecord, error) {
	raw, ok := ep.Annotations[resourcelock.LeaderElectionRecordAnnotationKey]
	if !ok {
		return LockRecord{ResourceVersion: ep.ResourceVersion, Found: true}, nil
	}
	var record resourcelock.LeaderElectionRecord
	if err := json.Unmarshal([]byte(raw), &record); err != nil {
		return LockRecord{}, fmt.Errorf("Endpoints %s/%s: leader annotation: %v", ep.Namespace, ep.Name, err)
	}
	return LockRecord{Holder: record.HolderIdentity, AcquireTime: record.AcquireTime.Time, RenewTime: record.RenewTime.Time,
		ResourceVersion: ep.ResourceVersion, Found: true}, nil
}

// LeaseLock reads a component's kube-system Lease.
func LeaseLock(ctx context.Context, client kubernetes.Interface, name string) (LockRecord, error) {
	lease, err := client.CoordinationV1().Leases("kube-system").Get(name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return LockRecord{}, nil
	}
	if err != nil {
		return LockRecord{}, err
	}
	return LeaseRecord(lease), nil
}

// LeaseRecord is the lock record a Lease holds.
func LeaseRecord(lease *coordinationv1.Lease) LockRecord {
	r := LockRecord{ResourceVersion: lease.ResourceVersion, Found: true}
	if lease.Spec.HolderIdentity != nil {
		r.Holder = *lease.Spec.HolderIdentity
	}
	if lease.Spec.AcquireTime != nil {
		r.AcquireTime = lease.Spec.AcquireTime.Time
	}
	if lease.Spec.RenewTime != nil {
		r.RenewTime = lease.Spec.RenewTime.Time
	}
	return r
}

package bench

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/idc-lts/kube-1.17/test/fixture"
)

// deletions is one measured phase of a run (a resync, a failover): it deletes pods one by one and
// times each until a watch shows its address gone from its Endpoints, and counts meanwhile the
// Endpoints writes to every other Service, which the phase should not need.
type deletions struct {
	r         *run
	slot      int
	opts      Options
	stopWatch func()

	mu        sync.Mutex
	writes    map[string]int
	deleted   map[string]bool
	waiting   map[string]pending
	latencies []float64

	stop     chan struct{}
	errs     chan error
	deleting sync.WaitGroup
}

// pending is a deleted pod whose address has yet to leave its Endpoints.
type pending struct {
	ip        string
	deletedAt time.Time
}

// watchDeletions starts watching the benchmark's Endpoints for a phase that will delete the pods
// of deletion slot slot: Services slot, slot+stride, slot+2*stride, ... so that phases sharing a
// control plane never delete the same pod.
func (r *run) watchDeletions(slot int, opts Options) *deletions {
	d := &deletions{r: r, slot: slot, opts: opts,
		writes: map[string]int{}, deleted: map[string]bool{}, waiting: map[string]pending{},
		stop: make(chan struct{}), errs: make(chan error, 1)}
	d.stopWatch = watchEndpoints(r.b, r.cp.Client, "", "", func(ep *v1.Endpoints, at time.Time) {
		if !strings.HasPrefix(ep.Namespace, namespacePrefix) {
			return
		}
		key := ep.Namespace + "/" + ep.Name
		d.mu.Lock()
		defer d.mu.Unlock()
		d.writes[key]++
		if p, ok := d.waiting[key]; ok && !fixture.HasIP(ep, p.ip) {
			d.latencies = append(d.latencies, at.Sub(p.deletedAt).Seconds())
			delete(d.waiting, key)
		}
	})
	return d
}

// start deletes opts.Deletions pods, one every opts.DeleteInterval, from now on.
func (d *deletions) start() {
	stride := len(d.r.services) / d.opts.Deletions
	d.deleting.Add(1)
	go func() {
		defer d.deleting.Done()
		for k := 0; k < d.opts.Deletions; k++ {
			s := d.r.services[k*stride+d.slot]
			pod, ip := s.FirstPod()
			key := s.Namespace + "/" + s.Name
			d.mu.Lock()
			d.deleted[key] = true
			d.waiting[key] = pending{ip: ip, deletedAt: time.Now()}
			d.mu.Unlock()
			if err := d.r.cp.Client.CoreV1().Pods(s.Namespace).Delete(pod, &metav1.DeleteOptions{}); err != nil {
				d.errs <- fmt.Errorf("deleting pod %s/%s: %v", s.Namespace, pod, err)
				return
			}
			select {
			case <-d.stop:
				return
			case <-time.After(d.opts.DeleteInterval):
			}
		}
	}()
}

// done reports whether every deleted address has left its Endpoints, or why it never will.
func (d *deletions) done() (bool, error) {
	select {
	case err := <-d.errs:
		return false, err
	default:
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.latencies) == d.opts.Deletions, nil
}

// outstanding is how many deleted (or yet to be deleted) addresses are still in Endpoints.
func (d *deletions) outstanding() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.opts.Deletions - len(d.latencies)
}

// finish stops deleting and watching, after letting the writes of a queue that has just drained
// reach the watch, and returns the writes to Services whose pods the phase kept and the
// deletions' latencies, sorted; an address still in its Endpoints counts until now.
func (d *deletions) finish() (otherWrites int, latencies []float64) {
	select {
	case <-d.stop:
	default:
		close(d.stop)
	}
	d.deleting.Wait()
	time.Sleep(2 * time.Second)
	d.stopWatch()
	d.mu.Lock()
	defer d.mu.Unlock()
	for key, count := range d.writes {
		if !d.deleted[key] {
			otherWrites += count
		}
	}
	latencies = append([]float64(nil), d.latencies...)
	// An address still there counts until now: a lower bound.
	for _, p := range d.waiting {
		latencies = append(latencies, time.Since(p.deletedAt).Seconds())
	}
	sort.Float64s(latencies)
	return otherWrites, latencies
}

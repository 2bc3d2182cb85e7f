package diagnose

import (
	"sort"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
)

// leaderAnnotation marks an object used as a leader-election lock (client-go resourcelock).
const leaderAnnotation = "control-plane.alpha.kubernetes.io/leader"

// electors are the components whose lock the findings name; their lock objects in kube-system
// carry the component's name.
var electors = []string{"kube-controller-manager", "kube-scheduler"}

// deletion is an Endpoints object deleted during the window, and the Service it belonged to then.
type deletion struct {
	key        string
	at         time.Time
	serviceUID types.UID // "" if there was no Service of that name
	back       time.Duration
}

// observer counts what the watches deliver during the window. The informers' own List and
// relists (an update whose resourceVersion did not change) are not writes and are skipped.
type observer struct {
	now func() time.Time

	mu       sync.Mutex
	watching bool // inside the window
	// lockWrites: updates of an Endpoints lock (leader annotation), by namespace/name.
	lockWrites map[string]int
	// leaseWrites: updates of the electors' Leases in kube-system, by component.
	leaseWrites map[string]int
	// rewrites: Endpoints updates that left the addresses as they were, by namespace/name;
	// rewroteMeta: which metadata they changed ("label service.kubernetes.io/headless", ...).
	rewrites    map[string]int
	rewroteMeta map[string]int
	// changes: Endpoints updates that changed addresses; otherMetadata: updates that changed
	// only metadata the endpoint controller does not write on a resync.
	changes, otherMetadata int
	deletions              []*deletion
	services               cache.Store
}

func newObserver(now func() time.Time) *observer {
	return &observer{
		now:         now,
		lockWrites:  map[string]int{},
		leaseWrites: map[string]int{},
		rewrites:    map[string]int{},
		rewroteMeta: map[string]int{},
	}
}

func (o *observer) setWatching(on bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.watching = on
}

func key(namespace, name string) string { return namespace + "/" + name }

func (o *observer) endpointsUpdated(oldObj, newObj interface{}) {
	old, ok1 := oldObj.(*v1.Endpoints)
	cur, ok2 := newObj.(*v1.Endpoints)
	if !ok1 || !ok2 || old.ResourceVersion == cur.ResourceVersion {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.watching {
		return
	}
	k := key(cur.Namespace, cur.Name)
	if cur.Annotations[leaderAnnotation] != "" || old.Annotations[leaderAnnotation] != "" {
		o.lockWrites[k]++
		return
	}
	if !apiequality.Semantic.DeepEqual(old.Subsets, cur.Subsets) {
		o.changes++
		return
	}
	changed := metadataChanges(old, cur)
	if svc := o.service(k); svc == nil || len(svc.Spec.Selector) == 0 || !byTheEndpointController(changed) {
		// Someone else's edit (a label copied from its Service, an application's own
		// selectorless Endpoints): not a resync's.
		o.otherMetadata++
		return
	}
	o.rewrites[k]++
	for _, what := range changed {
		o.rewroteMeta[what]++
	}
}

// resyncChanges are what upstream 1.17's endpoint controller changes when it rewrites unchanged
// Endpoints: it drops the trigger time of the last change, and the headless label it adds
// itself is compared with the Service's labels (#94112).
var resyncChanges = map[string]bool{
	"annotation " + v1.EndpointsLastChangeTriggerTime + " removed": true,
	"label " + v1.IsHeadlessService + " added":                     true,
	"nothing but the resourceVersion":                              true,
}

func byTheEndpointController(changed []string) bool {
	for _, what := range changed {
		if !resyncChanges[what] {
			return false
		}
	}
	return true
}

// metadataChanges names the labels and annotations an update added, removed or changed.
func metadataChanges(old, cur *v1.Endpoints) []string {
	var out []string
	diff := func(kind string, a, b map[string]string) {
		for k, v := range b {
			if w, ok := a[k]; !ok {
				out = append(out, kind+" "+k+" added")
			} else if w != v {
				out = append(out, kind+" "+k+" changed")
			}
		}
		for k := range a {
			if _, ok := b[k]; !ok {
				out = append(out, kind+" "+k+" removed")
			}
		}
	}
	diff("label", old.Labels, cur.Labels)
	diff("annotation", old.Annotations, cur.Annotations)
	if len(out) == 0 {
		out = append(out, "nothing but the resourceVersion")
	}
	sort.Strings(out)
	return out
}

func (o *observer) endpointsAdded(obj interface{}) {
	ep, ok := obj.(*v1.Endpoints)
	if !ok {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	k := key(ep.Namespace, ep.Name)
	for _, d := range o.deletions {
		if d.key == k && d.back == 0 {
			d.back = o.now().Sub(d.at)
		}
	}
}

func (o *observer) endpointsDeleted(obj interface{}) {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	ep, ok := obj.(*v1.Endpoints)
	if !ok {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.watching {
		return
	}
	d := &deletion{key: key(ep.Namespace, ep.Name), at: o.now()}
	// Only the Endpoints the endpoint controller keeps (its Service has a selector).
	if svc := o.service(d.key); svc != nil && len(svc.Spec.Selector) > 0 {
		d.serviceUID = svc.UID
	}
	o.deletions = append(o.deletions, d)
}

func (o *observer) leaseUpdated(oldObj, newObj interface{}) {
	old, ok1 := oldObj.(*coordinationv1.Lease)
	cur, ok2 := newObj.(*coordinationv1.Lease)
	if !ok1 || !ok2 || old.ResourceVersion == cur.ResourceVersion {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.watching {
		o.leaseWrites[cur.Name]++
	}
}

func (o *observer) service(k string) *v1.Service {
	if o.services == nil {
		return nil
	}
	obj, exists, err := o.services.GetByKey(k)
	if err != nil || !exists {
		return nil
	}
	svc, _ := obj.(*v1.Service)
	return svc
}

// liveDeletions are the deletions of Endpoints whose Service existed before and still exists,
// the same object (UID), at the end of the window: the endpoint controller deleted the
// Endpoints of a live Service, which only a controller that went back in time does.
func (o *observer) liveDeletions() []deletion {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []deletion
	for _, d := range o.deletions {
		if d.serviceUID == "" {
			continue
		}
		if svc := o.service(d.key); svc != nil && svc.UID == d.serviceUID && svc.DeletionTimestamp == nil {
			out = append(out, *d)
		}
	}
	return out
}

// counts is a copy of the counters, for the findings.
type counts struct {
	lockWrites, leaseWrites, rewrites, rewroteMeta map[string]int
	changes, otherMetadata                         int
}

func (o *observer) counts() counts {
	o.mu.Lock()
	defer o.mu.Unlock()
	cp := func(m map[string]int) map[string]int {
		out := make(map[string]int, len(m))
		for k, v := range m {
			out[k] = v
		}
		return out
	}
	return counts{cp(o.lockWrites), cp(o.leaseWrites), cp(o.rewrites), cp(o.rewroteMeta), o.changes, o.otherMetadata}
}

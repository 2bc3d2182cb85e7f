package ha

import (
	"bufio"
	"encoding/json"
	"os"
	"sort"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// auditEvent is the part of an audit.k8s.io/v1 Event the suite reads (k8s.io/apiserver's type
// would bring the whole apiserver module into this repository's graph for five fields).
type auditEvent struct {
	Stage string `json:"stage"`
	Verb  string `json:"verb"`
	User  struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef *struct {
		Resource  string `json:"resource"`
		Namespace string `json:"namespace"`
		Name      string `json:"name"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	RequestObject  json.RawMessage  `json:"requestObject"`
	StageTimestamp metav1.MicroTime `json:"stageTimestamp"`
}

// write is one completed write to an Endpoints or Lease object, as an apiserver recorded it.
type write struct {
	at   time.Time
	user string
	verb string
	// lock: the write is to kube-controller-manager's leader-election lock (its Lease, or its
	// kube-system Endpoints under the endpointsleases lock).
	lock      bool
	namespace string
	name      string
	ok        bool
	// ips are the addresses (ready and not) an Endpoints create or update carried.
	ips []string
	// released: a lock write that names no holder (a leader giving its lease up).
	released bool
}

// writes reads every apiserver's audit log and returns the writes, oldest first.
func (c *cluster) writes() []write {
	var out []write
	for _, a := range c.apiservers {
		f, err := os.Open(a.auditLog)
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			c.t.Fatal(err)
		}
		scanner := bufio.NewScanner(f)
		scanner.Buffer(make([]byte, 1024*1024), 16*1024*1024)
		for scanner.Scan() {
			var e auditEvent
			if json.Unmarshal(scanner.Bytes(), &e) != nil || e.Stage != "ResponseComplete" || e.ObjectRef == nil {
				continue
			}
			w := write{
				at: e.StageTimestamp.Time, user: e.User.Username, verb: e.Verb,
				namespace: e.ObjectRef.Namespace, name: e.ObjectRef.Name,
				lock: e.ObjectRef.Namespace == metav1.NamespaceSystem && e.ObjectRef.Name == "kube-controller-manager",
				ok:   e.ResponseStatus != nil && e.ResponseStatus.Code < 300,
			}
			if e.ObjectRef.Resource == "endpoints" && len(e.RequestObject) > 0 {
				var ep v1.Endpoints
				if json.Unmarshal(e.RequestObject, &ep) == nil {
					for _, s := range ep.Subsets {
						for _, a := range append(append([]v1.EndpointAddress{}, s.Addresses...), s.NotReadyAddresses...) {
							w.ips = append(w.ips, a.IP)
						}
					}
				}
			}
			if w.lock && e.ObjectRef.Resource == "leases" && len(e.RequestObject) > 0 {
				var lease coordinationv1.Lease
				if json.Unmarshal(e.RequestObject, &lease) == nil {
					w.released = lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == ""
				}
			}
			out = append(out, w)
		}
		f.Close()
		if err := scanner.Err(); err != nil {
			c.t.Fatalf("reading %s: %v", a.auditLog, err)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].at.Before(out[j].at) })
	return out
}

// history is what the audit logs say about leadership and Endpoints.
type history struct {
	writes []write
}

func (c *cluster) history() history { return history{writes: c.writes()} }

// leaders returns the successive users whose writes to the lock succeeded.
func (h history) leaders() []string {
	var out []string
	for _, w := range h.writes {
		if w.lock && w.ok && (len(out) == 0 || out[len(out)-1] != w.user) {
			out = append(out, w.user)
		}
	}
	return out
}

// successor is the last leader when leadership changed hands, or "".
func (h history) successor() string {
	if leaders := h.leaders(); len(leaders) > 1 {
		return leaders[len(leaders)-1]
	}
	return ""
}

// leaderAt is the user whose lock write last succeeded at or before t, or "".
func (h history) leaderAt(t time.Time) string {
	leader := ""
	for _, w := range h.writes {
		if w.at.After(t) {
			break
		}
		if w.lock && w.ok {
			leader = w.user
		}
	}
	return leader
}

// firstLockWriteBy is when user's first successful lock write after t happened (zero if none).
func (h history) firstLockWriteBy(user string, after time.Time) time.Time {
	for _, w := range h.writes {
		if w.lock && w.ok && w.user == user && w.at.After(after) {
			return w.at
		}
	}
	return time.Time{}
}

// releaseBy is when user's first successful lock write after t that names no holder happened
// (zero if none): the moment it gave its lease up.
func (h history) releaseBy(user string, after time.Time) time.Time {
	for _, w := range h.writes {
		if w.lock && w.ok && w.released && w.user == user && w.at.After(after) {
			return w.at
		}
	}
	return time.Time{}
}

// dualWrites are the successful Endpoints writes in namespace made by an instance while the lock
// was last written by another one: the writes of a leader that no longer was one.
func (h history) dualWrites(namespace string) []write {
	var out []write
	leader := ""
	for _, w := range h.writes {
		switch {
		case w.lock && w.ok:
			leader = w.user
		case !w.lock && w.ok && w.namespace == namespace && leader != "" && w.user != leader:
			out = append(out, w)
		}
	}
	return out
}

// lostEndpoints are the Endpoints writes in namespace that dropped a pod the test never deleted,
// or deleted the Endpoints of a Service that exists (the suite never deletes a Service).
func (h history) lostEndpoints(namespace string, podIPs map[string][]string, deletedIPs map[string]bool) []write {
	var out []write
	for _, w := range h.writes {
		if w.lock || !w.ok || w.namespace != namespace {
			continue
		}
		if w.verb == "delete" {
			out = append(out, w)
			continue
		}
		carried := map[string]bool{}
		for _, ip := range w.ips {
			carried[ip] = true
		}
		for _, ip := range podIPs[w.name] {
			if !carried[ip] && !deletedIPs[ip] {
				out = append(out, w)
				break
			}
		}
	}
	return out
}

package ha

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/idc-lts/kube-1.17/test/fixture"
	"github.com/idc-lts/kube-1.17/test/harness"
)

const (
	namespace = "ha"
	// services: half have three pods (fixture.MultiSubset), of which two may be deleted while
	// the Endpoints still exist: enough pods for one deletion every 500 ms for 30 s.
	services = 60
	// Upstream's leader-election defaults, which the instances run with.
	leaseDuration = 15 * time.Second
	renewDeadline = 10 * time.Second
)

// recoveryBound is how long a scenario waits for a pod deletion to reach its Endpoints when
// the scenario does not recover faster: def, or HA_RECOVERY_BOUND (e.g. "5m" to measure how long
// stock stays stuck).
func recoveryBound(t *testing.T, def time.Duration) time.Duration {
	if s := os.Getenv("HA_RECOVERY_BOUND"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			t.Fatalf("HA_RECOVERY_BOUND=%q: want a positive duration such as 5m", s)
		}
		return d
	}
	return def
}

// scenario is a running cluster with the fixture Services, complete Endpoints and a leader.
type scenario struct {
	*cluster
	fixtures []fixture.ServiceFixture
	// podIPs: Service name -> the IPs of all its pods, deleted or not.
	podIPs map[string][]string
	// deletable: pods (namespace-less name, Service, IP) the scenario may delete, in order.
	deletable []pod
	next      int
	deleted   map[string]bool
}

type pod struct{ name, service, ip string }

// setUp starts the cluster, creates the Services, starts the instances of the build under test
// and waits until one leads and every Endpoints is complete.
func setUp(t *testing.T, kcmArgs ...string) *scenario {
	return setUpVariant(t, harness.VariantUnderTest(), kcmArgs...)
}

// setUpVariant is setUp for the instances of a given build.
func setUpVariant(t *testing.T, variant string, kcmArgs ...string) *scenario {
	c := startCluster(t, variant)
	s := &scenario{cluster: c, podIPs: map[string][]string{}, deleted: map[string]bool{}}
	s.fixtures = fixture.CreateServices(t, c.client, namespace, 0, services)
	for _, f := range s.fixtures {
		names := make([]string, 0, len(f.PodIPs))
		for name := range f.PodIPs {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			ip := f.PodIPs[name]
			s.podIPs[f.Name] = append(s.podIPs[f.Name], ip)
			if f.Shape == fixture.MultiSubset && !strings.HasSuffix(name, "-2") {
				s.deletable = append(s.deletable, pod{name: name, service: f.Name, ip: ip})
			}
		}
	}
	c.startKubeControllerManagers(kcmArgs...)
	s.waitLeader(60 * time.Second)
	s.waitEndpointsComplete(60 * time.Second)
	return s
}

// waitLeader waits until an instance has written the lock and returns it.
func (s *scenario) waitLeader(timeout time.Duration) string {
	var leader string
	if err := wait.PollImmediate(250*time.Millisecond, timeout, func() (bool, error) {
		leader = s.history().leaderAt(time.Now())
		return leader != "", nil
	}); err != nil {
		s.t.Fatalf("no instance wrote the leader-election lock within %v", timeout)
	}
	return leader
}

// waitEndpointsComplete waits until every Service's Endpoints list exactly its live pods.
func (s *scenario) waitEndpointsComplete(timeout time.Duration) {
	var incomplete []string
	err := wait.PollImmediate(500*time.Millisecond, timeout, func() (bool, error) {
		list, err := s.client.CoreV1().Endpoints(namespace).List(metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		listed := map[string]map[string]bool{}
		for i := range list.Items {
			ips := map[string]bool{}
			for _, subset := range list.Items[i].Subsets {
				for _, a := range append(append([]v1.EndpointAddress{}, subset.Addresses...), subset.NotReadyAddresses...) {
					ips[a.IP] = true
				}
			}
			listed[list.Items[i].Name] = ips
		}
		incomplete = nil
		for service, ips := range s.podIPs {
			live := 0
			for _, ip := range ips {
				if !s.deleted[ip] {
					live++
					if !listed[service][ip] {
						incomplete = append(incomplete, service)
						break
					}
				}
			}
			if len(listed[service]) != live && (len(incomplete) == 0 || incomplete[len(incomplete)-1] != service) {
				incomplete = append(incomplete, service)
			}
		}
		return len(incomplete) == 0, nil
	})
	if err != nil {
		sort.Strings(incomplete)
		s.t.Fatalf("%d of %d Endpoints do not list exactly their live pods after %v: %v", len(incomplete), len(s.podIPs), timeout, incomplete)
	}
}

// deletePod deletes the next deletable pod at once (no kubelet runs here) and returns it.
func (s *scenario) deletePod() pod {
	if s.next == len(s.deletable) {
		s.t.Fatalf("all %d deletable pods are deleted", len(s.deletable))
	}
	p := s.deletable[s.next]
	s.next++
	s.deleted[p.ip] = true
	zero := int64(0)
	// The test's own connection may be cut by the fault (an apiserver stopping): retry.
	err := wait.PollImmediate(200*time.Millisecond, 30*time.Second, func() (bool, error) {
		err := s.client.CoreV1().Pods(namespace).Delete(p.name, &metav1.DeleteOptions{GracePeriodSeconds: &zero})
		if err != nil && !errors.IsNotFound(err) {
			s.t.Logf("deleting pod %s: %v (retrying)", p.name, err)
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		s.t.Fatalf("deleting pod %s: %v", p.name, err)
	}
	return p
}

// waitRemoved waits until p's Endpoints no longer list it and returns how long after from that
// was seen, or false if it was not within bound.
func (s *scenario) waitRemoved(p pod, from time.Time, bound time.Duration) (time.Duration, bool) {
	for time.Since(from) < bound {
		ep, err := s.client.CoreV1().Endpoints(namespace).Get(p.service, metav1.GetOptions{})
		if err == nil && !fixture.HasIP(ep, p.ip) {
			return time.Since(from), true
		}
		if err != nil && !errors.IsNotFound(err) {
			s.t.Logf("reading Endpoints %s: %v", p.service, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return bound, false
}

// outcome is what a scenario measured, for its figures line and its checks.
type outcome struct {
	scenario string
	// deleted is the pod deleted at the fault; recovery is how long until its Endpoints dropped
	// it, or the bound waited if they did not (recovered false).
	deleted    pod
	recovery   time.Duration
	recovered  bool
	leaders    []string
	lost       []write
	dualWrites []write
	extra      []string
}

// check fails the test on a deletion that did not reach its Endpoints, lost Endpoints or dual
// writes, and writes the figures line to the
// test log and to <log dir>/figures.txt.
func (s *scenario) check(o outcome) {
	h := s.figures(&o)
	if !o.recovered {
		s.t.Errorf("%s: the deletion of pod %s did not reach its Endpoints within %v of the fault (leaders %v)",
			o.scenario, o.deleted.name, o.recovery, o.leaders)
	}
	for _, w := range o.lost {
		s.t.Errorf("LIVE ENDPOINTS LOST: %s %s/%s by %s at %s carried %v", w.verb, w.namespace, w.name, w.user, w.at.Format(time.StampMicro), w.ips)
	}
	for _, w := range o.dualWrites {
		s.t.Errorf("TWO LEADERS: %s wrote Endpoints %s at %s while %s held the lock", w.user, w.name, w.at.Format(time.StampMicro), h.leaderAt(w.at))
	}
}

// figures completes o from the audit logs (leaders, lost Endpoints, dual writes) and writes its
// figures line to the test log and to <log dir>/figures.txt.
func (s *scenario) figures(o *outcome) history {
	h := s.history()
	o.leaders = h.leaders()
	o.lost = h.lostEndpoints(namespace, s.podIPs, s.deleted)
	o.dualWrites = h.dualWrites(namespace)
	recovery := fmt.Sprintf("%.1fs", o.recovery.Seconds())
	if !o.recovered {
		recovery = fmt.Sprintf("> %v (bound)", o.recovery)
	}
	line := fmt.Sprintf("%s\t%s\trecovery %s\tleaders %s\tlive Endpoints lost %d\tdual writes %d",
		o.scenario, s.variant, recovery, strings.Join(o.leaders, " -> "), len(o.lost), len(o.dualWrites))
	if len(o.extra) > 0 {
		line += "\t" + strings.Join(o.extra, "\t")
	}
	s.t.Log("FIGURES " + line)
	f, err := os.OpenFile(filepath.Join(s.logDir, "figures.txt"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err == nil {
		fmt.Fprintln(f, line)
		f.Close()
	}
	return h
}

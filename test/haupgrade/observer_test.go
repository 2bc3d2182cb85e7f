package haupgrade

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/idc-lts/kube-1.17/test/harness"
	"github.com/idc-lts/kube-1.17/test/kubeadmnode"
)

// elected are the components that elect a leader.
var elected = []string{"kube-controller-manager", "kube-scheduler"}

// handover is one change of a component's Lease holder: the old holder's last renewal seen (or
// its release) and the new holder's acquisition; the time between is time without a leader.
type handover struct {
	component, from, to   string
	lastRenewal, acquired time.Time
	// released: the old holder gave the Lease up (ours on SIGTERM, patch 0028) rather than
	// leaving it to expire (stock, or a process killed).
	released bool
	// successor is the new holder's build: "stock" if it also names itself in the component's
	// Endpoints lock, which only stock's endpointsleases lock writes, "ours" if not, "unknown"
	// if the Endpoints could not be read.
	successor string
}

// master is the master a lock holder runs on: its identity is the hostname, which is the
// master's name, then "_" and a UUID.
func master(identity string) string {
	name, _, _ := strings.Cut(identity, "_")
	return name
}

// String says who handed over to whom and how long nobody led.
func (h handover) String() string {
	how := "expired"
	if h.released {
		how = "released"
	}
	short := map[string]string{"kube-controller-manager": "kcm", "kube-scheduler": "scheduler"}[h.component]
	return fmt.Sprintf("%s %s (%s) -> %s (%s) %.1fs", short, master(h.from), how, master(h.to), h.successor, h.noLeader().Seconds())
}

func (h handover) noLeader() time.Duration { return h.acquired.Sub(h.lastRenewal) }

// dualLeaders is a sample in which two instances of a component each reported itself the leader
// (leader_election_master_status 1 on its /metrics).
type dualLeaders struct {
	component string
	masters   []string
	at        time.Time
}

// request is one request of the client through the load balancer.
type request struct {
	at  time.Time
	err error
}

// observer follows the Leases of both elected components, samples whether each instance leads, and
// runs a client that reads and writes through the load balancer, as an operator's tools and the
// cluster's users do, from its start until stopped.
type observer struct {
	mu        sync.Mutex
	handovers []handover
	duals     []dualLeaders
	requests  []request
	stop      context.CancelFunc
	done      sync.WaitGroup
}

// lockState is a component's Lease as last read, and whether its holder has since released it.
type lockState struct {
	harness.LockRecord
	released bool
}

// metricsPorts are the elected components' secure ports on each master's loopback.
var metricsPorts = map[string]int{"kube-controller-manager": 10257, "kube-scheduler": 10259}

// startObserver starts following the Leases through config (the load balancer's address),
// asking each master's instances' /metrics every second (in the master's namespace, as the
// cluster's admin), and the client, a request every interval.
func startObserver(config *rest.Config, masters []*kubeadmnode.Node, interval time.Duration) (*observer, error) {
	metrics, err := metricsClients(config, masters)
	if err != nil {
		return nil, err
	}
	config = rest.CopyConfig(config)
	config.Timeout = 10 * time.Second
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		return nil, err
	}
	probe := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "ha-upgrade-probe", Namespace: "default"}, Data: map[string]string{"n": "0"}}
	if _, err := client.CoreV1().ConfigMaps("default").Create(probe); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	o := &observer{stop: cancel}
	o.done.Add(3)
	go func() {
		defer o.done.Done()
		last := map[string]lockState{}
		for ctx.Err() == nil {
			if err := o.followLocks(ctx, client, last); err != nil {
				sleep(ctx, time.Second)
			}
		}
	}()
	go func() {
		defer o.done.Done()
		for ctx.Err() == nil {
			o.sampleLeaders(ctx, metrics)
			sleep(ctx, time.Second)
		}
	}()
	go func() {
		defer o.done.Done()
		for n := 0; ctx.Err() == nil; n++ {
			// A read each round and a write every fifth, each a request of its own.
			_, err := client.CoreV1().ConfigMaps("default").Get(probe.Name, metav1.GetOptions{})
			o.record(err)
			if n%5 == 0 {
				o.record(writeProbe(client, probe.Name, n))
			}
			sleep(ctx, interval)
		}
	}()
	return o, nil
}

func writeProbe(client kubernetes.Interface, name string, n int) error {
	cm, err := client.CoreV1().ConfigMaps("default").Get(name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	cm.Data["n"] = fmt.Sprint(n)
	_, err = client.CoreV1().ConfigMaps("default").Update(cm)
	return err
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

func (o *observer) record(err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.requests = append(o.requests, request{at: time.Now(), err: err})
}

// followLocks lists the Leases in kube-system, then follows every write to them through a watch
// that resumes from the last resourceVersion after an error (an apiserver restarting behind the
// balancer), until ctx ends (nil) or the watch cannot resume (an error: the caller lists again).
// Every write is seen, a release included: ours writes the Lease with no holder about 0.1 s
// before a standby of ours takes it, which a poll every 500 ms mostly missed.
func (o *observer) followLocks(ctx context.Context, client kubernetes.Interface, last map[string]lockState) error {
	leases := client.CoordinationV1().Leases("kube-system")
	list, err := leases.List(metav1.ListOptions{})
	if err != nil {
		return err
	}
	for i := range list.Items {
		o.lockWritten(client, &list.Items[i], last)
	}
	w, err := watchtools.NewRetryWatcher(list.ResourceVersion, &cache.ListWatch{
		WatchFunc: func(options metav1.ListOptions) (watch.Interface, error) { return leases.Watch(options) }})
	if err != nil {
		return err
	}
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case event, ok := <-w.ResultChan():
			if !ok {
				return fmt.Errorf("the Leases' watch ended")
			}
			if event.Type == watch.Error {
				return fmt.Errorf("the Leases' watch: %v", apierrors.FromObject(event.Object))
			}
			if lease, ok := event.Object.(*coordinationv1.Lease); ok && (event.Type == watch.Added || event.Type == watch.Modified) {
				o.lockWritten(client, lease, last)
			}
		}
	}
}

// lockWritten takes one write of a Lease (last is each component's as last seen): a new holder
// is a handover from the one last seen, its time without a leader from that holder's last
// renewal (or its release, which ours writes as an empty holder) to the new holder's acquisition.
func (o *observer) lockWritten(client kubernetes.Interface, lease *coordinationv1.Lease, last map[string]lockState) {
	c := lease.Name
	if !slices.Contains(elected, c) {
		return
	}
	r := harness.LeaseRecord(lease)
	prev, seen := last[c]
	switch {
	case r.Holder == "" && seen:
		prev.RenewTime, prev.released = r.RenewTime, true
		last[c] = prev
	case r.Holder != "" && seen && r.Holder != prev.Holder:
		h := handover{component: c, from: prev.Holder, to: r.Holder, lastRenewal: prev.RenewTime, acquired: r.AcquireTime,
			released: prev.released, successor: successorBuild(client, c, r.Holder)}
		o.mu.Lock()
		o.handovers = append(o.handovers, h)
		o.mu.Unlock()
		last[c] = lockState{LockRecord: r}
	case r.Holder != "":
		last[c] = lockState{LockRecord: r}
	}
}

// successorBuild tells a new Lease holder's build by the component's Endpoints lock: stock's
// endpointsleases writes it before the Lease, so by the time the Lease names a stock holder the
// Endpoints do too; ours never writes it. A read that fails is tried again; "unknown" after three.
func successorBuild(client kubernetes.Interface, component, holder string) string {
	for try := 0; try < 3; try++ {
		r, err := harness.EndpointsLock(context.Background(), client, component)
		if err == nil && r.Holder == holder {
			return "stock"
		}
		if err == nil {
			return "ours"
		}
		time.Sleep(time.Second)
	}
	return "unknown"
}

// metricsClient reaches one master's instances' secure ports on its loopback.
type metricsClient struct {
	master string
	client *http.Client
}

// metricsClients are an HTTPS client per master dialling into its namespace with the admin's
// client certificate (the instances' serving certificates are their own, self-signed).
func metricsClients(config *rest.Config, masters []*kubeadmnode.Node) ([]metricsClient, error) {
	tlsConfig, err := rest.TLSConfigFor(config)
	if err != nil {
		return nil, err
	}
	tlsConfig = tlsConfig.Clone()
	tlsConfig.InsecureSkipVerify = true
	tlsConfig.RootCAs = nil
	var clients []metricsClient
	for _, m := range masters {
		ns := m.NetNS
		clients = append(clients, metricsClient{master: m.Name, client: &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
			TLSClientConfig:   tlsConfig,
			DisableKeepAlives: true, // a restarted instance is a new listener
			DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
				return ns.DialContext(ctx, network, addr)
			},
		}}})
	}
	return clients, nil
}

// sampleLeaders asks every instance whether it leads; two that say so for one component are two
// leaders. An instance that does not answer (restarting) leads nothing.
func (o *observer) sampleLeaders(ctx context.Context, clients []metricsClient) {
	now := time.Now()
	for _, c := range elected {
		var leaders []string
		for _, m := range clients {
			if leads(ctx, m.client, metricsPorts[c], c) {
				leaders = append(leaders, m.master)
			}
		}
		if len(leaders) > 1 {
			o.mu.Lock()
			o.duals = append(o.duals, dualLeaders{component: c, masters: leaders, at: now})
			o.mu.Unlock()
		}
	}
}

// leads reports whether the instance on port says leader_election_master_status 1 for component.
func leads(ctx context.Context, client *http.Client, port int, component string) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("https://127.0.0.1:%d/metrics", port), nil)
	if err != nil {
		return false
	}
	resp, err := client.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return false
	}
	scanner := bufio.NewScanner(resp.Body)
	scanner.Buffer(make([]byte, 64*1024), 1024*1024)
	for scanner.Scan() {
		line := scanner.Text()
		if strings.HasPrefix(line, "leader_election_master_status{") && strings.Contains(line, `name="`+component+`"`) {
			return strings.HasSuffix(line, " 1")
		}
	}
	return false
}

// Stop ends the sampling and the client.
func (o *observer) Stop() {
	o.stop()
	o.done.Wait()
}

// figures is what the observer saw in [from, to): each component's handovers (by acquisition),
// the samples with two leaders, and the client's requests and failures.
type figures struct {
	handovers        []handover
	duals            []dualLeaders
	requests, failed int
	firstFailure     error
}

func (o *observer) between(from, to time.Time) figures {
	o.mu.Lock()
	defer o.mu.Unlock()
	in := func(t time.Time) bool { return !t.Before(from) && t.Before(to) }
	var f figures
	for _, h := range o.handovers {
		if in(h.acquired) {
			f.handovers = append(f.handovers, h)
		}
	}
	for _, d := range o.duals {
		if in(d.at) {
			f.duals = append(f.duals, d)
		}
	}
	for _, r := range o.requests {
		if in(r.at) {
			f.requests++
			if r.err != nil {
				f.failed++
				if f.firstFailure == nil {
					f.firstFailure = r.err
				}
			}
		}
	}
	return f
}

// noLeader is the longest time without a leader of component among f's handovers, and how many.
func (f figures) noLeader(component string) (time.Duration, int) {
	var longest time.Duration
	n := 0
	for _, h := range f.handovers {
		if h.component == component {
			n++
			if d := h.noLeader(); d > longest {
				longest = d
			}
		}
	}
	return longest, n
}

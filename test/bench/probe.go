package bench

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"sort"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/idc-lts/kube-1.17/test/fixture"
	"github.com/idc-lts/kube-1.17/test/harness"
)

// SlowRequest is the latency above which the page counts a probe request as slow.
const SlowRequest = time.Second

// ProbeResult is what an ordinary client saw of the apiserver during a window.
type ProbeResult struct {
	// Requests counts the requests made, one every probeInterval whatever became of the others.
	Requests int `json:"requests"`
	// Latencies of the requests that succeeded, sorted, in seconds.
	Latencies []float64 `json:"latenciesSeconds"`
	P50       float64   `json:"p50Seconds"`
	P99       float64   `json:"p99Seconds"`
	Max       float64   `json:"maxSeconds"`
	// Slow counts the successful requests that took longer than SlowRequest.
	Slow int `json:"slow"`
	// Errors counts failed requests by cause ("504 Timeout", "429 TooManyRequests", "client
	// timeout", ...); FirstErrors keeps each cause's first message.
	Errors      map[string]int    `json:"errors"`
	FirstErrors map[string]string `json:"firstErrors"`
}

// ErrorCount is the number of failed requests.
func (p ProbeResult) ErrorCount() int {
	n := 0
	for _, count := range p.Errors {
		n += count
	}
	return n
}

const (
	probeInterval = 100 * time.Millisecond
	// probeTimeout is the client's own limit, above the apiserver's 60 s request timeout, so that
	// the apiserver's 504 is what a stuck request normally ends with.
	probeTimeout = 70 * time.Second
)

// probe is a client doing what an ordinary controller does between its watches: small GETs and
// LISTs of core objects in protobuf, open loop (a request every probeInterval, each on its own,
// so a stalled apiserver cannot hide behind fewer requests).
type probe struct {
	client   kubernetes.Interface
	services []fixture.ServiceFixture
	stopCh   chan struct{}
	loop     sync.WaitGroup
	inFlight sync.WaitGroup

	mu     sync.Mutex
	result ProbeResult
}

// startProbe starts probing the control plane with a client of its own.
func startProbe(b testing.TB, cp *harness.ControlPlane, services []fixture.ServiceFixture) *probe {
	cfg := rest.CopyConfig(cp.Config)
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	cfg.Timeout = probeTimeout
	// A connection pool of its own, not the one the benchmark's own requests use.
	cfg.Transport = &http.Transport{MaxIdleConnsPerHost: 100}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	p := &probe{client: client, services: services, stopCh: make(chan struct{}),
		result: ProbeResult{Errors: map[string]int{}, FirstErrors: map[string]string{}}}
	p.loop.Add(1)
	go func() {
		defer p.loop.Done()
		tick := time.NewTicker(probeInterval)
		defer tick.Stop()
		for i := 0; ; i++ {
			p.inFlight.Add(1)
			go func(i int) {
				defer p.inFlight.Done()
				p.request(i)
			}(i)
			select {
			case <-p.stopCh:
				return
			case <-tick.C:
			}
		}
	}()
	return p
}

// request i reads one of three things about Service i: the Service, its Endpoints, or the list of
// Services of its namespace (100).
func (p *probe) request(i int) {
	s := p.services[(i/3)%len(p.services)]
	start := time.Now()
	var err error
	switch i % 3 {
	case 0:
		_, err = p.client.CoreV1().Services(s.Namespace).Get(s.Name, metav1.GetOptions{})
	case 1:
		_, err = p.client.CoreV1().Endpoints(s.Namespace).Get(s.Name, metav1.GetOptions{})
	case 2:
		_, err = p.client.CoreV1().Services(s.Namespace).List(metav1.ListOptions{})
	}
	latency := time.Since(start).Seconds()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.result.Requests++
	if err != nil && !apierrors.IsNotFound(err) {
		cause := errorCause(err)
		if p.result.Errors[cause] == 0 {
			p.result.FirstErrors[cause] = err.Error()
		}
		p.result.Errors[cause]++
		return
	}
	p.result.Latencies = append(p.result.Latencies, latency)
	if latency > SlowRequest.Seconds() {
		p.result.Slow++
	}
}

// errorCause names what made a request fail: the apiserver's status code and reason, or the
// client's timeout, or the transport error's kind.
func errorCause(err error) string {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return fmt.Sprintf("%d %s", status.Status().Code, status.Status().Reason)
	}
	var netErr net.Error
	if errors.As(err, &netErr) && netErr.Timeout() {
		return "client timeout"
	}
	return "transport error"
}

// stop ends the probe, waits for the requests in flight (at most probeTimeout) and returns
// what it saw.
func (p *probe) stop() ProbeResult {
	close(p.stopCh)
	p.loop.Wait()
	p.inFlight.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	r := p.result
	sort.Float64s(r.Latencies)
	r.P50, r.P99, r.Max = Percentiles(r.Latencies)
	return r
}

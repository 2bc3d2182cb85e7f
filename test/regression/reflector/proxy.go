// Package reflector is the regression suite for the reflector going back in time (patch
// "client-go: the reflector never goes back in time"). A loopback proxy between
// kube-controller-manager and the apiserver emulates each failure.
package reflector

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

const servicesPath = "/api/v1/services"

// staleCatchUp is how long a lagging watch cache that served a stale list takes to send the
// watch events that follow it.
const staleCatchUp = 3 * time.Second

// faultProxy forwards kube-controller-manager's requests to the apiserver and, on request, breaks
// the Services stream the way the incidents did. kube-controller-manager must speak JSON
// (--kube-api-content-type=application/json) for the proxy to read it.
type faultProxy struct {
	t        *testing.T
	upstream string
	server   *httptest.Server
	client   *http.Client

	mu sync.Mutex
	// lastRV is the resourceVersion each Service (namespace/name) had in the last list or event
	// the proxy passed on: what a DELETED event should not carry.
	lastRV map[string]string
	// rewriteDeleteOf: the next DELETED event for this Service carries its previous
	// resourceVersion, and the watch stream ends right after it.
	rewriteDeleteOf string
	rewritten       chan struct{}
	// slowDeletes: after the rewrite, each DELETED event is followed by a pause, as a replay of
	// a long history through a busy apiserver would be, so that the controller acts on the
	// replayed deletion before the replayed re-creation arrives.
	slowDeletes bool
	// staleList, if set, answers Services lists at resourceVersion "0", as a lagging watch cache.
	staleList []byte
	// staleListServed: the next Services watch comes from the lagging cache too, which sends
	// nothing until it has caught up (staleCatchUp), so that the controller acts on the stale
	// list before the watch replays what the list missed.
	staleListServed bool
	// expireWatches: open Services watches end with a 410 error event, forcing a relist.
	expireWatches chan struct{}
	// watchRVs records the resourceVersion of every Services watch request.
	watchRVs []string
	listRVs  []string
	// listQueries records every Services list request as "resourceVersion=R limit=L continue=yes|no".
	listQueries []string
}

func newFaultProxy(t *testing.T, upstream string) *faultProxy {
	p := &faultProxy{
		t:             t,
		upstream:      strings.TrimRight(upstream, "/"),
		client:        &http.Client{},
		lastRV:        map[string]string{},
		expireWatches: make(chan struct{}),
	}
	p.server = httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(p.server.Close)
	return p
}

func (p *faultProxy) URL() string { return p.server.URL }

func (p *faultProxy) serve(w http.ResponseWriter, r *http.Request) {
	isServices := r.URL.Path == servicesPath
	isWatch := r.URL.Query().Get("watch") == "true" || r.URL.Query().Get("watch") == "1"
	if isServices && !isWatch {
		p.mu.Lock()
		p.listRVs = append(p.listRVs, r.URL.Query().Get("resourceVersion"))
		continued := "no"
		if r.URL.Query().Get("continue") != "" {
			continued = "yes"
		}
		p.listQueries = append(p.listQueries, fmt.Sprintf("resourceVersion=%s limit=%s continue=%s",
			r.URL.Query().Get("resourceVersion"), r.URL.Query().Get("limit"), continued))
		stale := p.staleList
		if stale != nil && r.URL.Query().Get("resourceVersion") == "0" {
			p.staleListServed = true
		} else {
			stale = nil
		}
		p.mu.Unlock()
		if stale != nil {
			w.Header().Set("Content-Type", "application/json")
			w.Write(stale)
			return
		}
	}

	req, err := http.NewRequest(r.Method, p.upstream+r.URL.RequestURI(), r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	req = req.WithContext(r.Context())
	for k, v := range r.Header {
		req.Header[k] = v
	}
	// Let the transport negotiate (and undo) compression, so the proxy sees plain JSON.
	req.Header.Del("Accept-Encoding")
	resp, err := p.client.Do(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.Header().Del("Content-Length")
	w.WriteHeader(resp.StatusCode)

	switch {
	case isServices && isWatch && resp.StatusCode == http.StatusOK:
		p.mu.Lock()
		p.watchRVs = append(p.watchRVs, r.URL.Query().Get("resourceVersion"))
		lagging := p.staleListServed
		p.staleListServed = false
		p.mu.Unlock()
		if lagging {
			time.Sleep(staleCatchUp)
		}
		p.serveServicesWatch(w, resp.Body)
	case isServices && resp.StatusCode == http.StatusOK:
		body, _ := io.ReadAll(resp.Body)
		p.recordList(body)
		w.Write(body)
	default:
		copyFlushing(w, resp.Body)
	}
}

// copyFlushing copies a response as it arrives: watch streams must not wait in a buffer.
func copyFlushing(w http.ResponseWriter, body io.Reader) {
	flusher, _ := w.(http.Flusher)
	buf := make([]byte, 32*1024)
	for {
		n, err := body.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return
			}
			if flusher != nil {
				flusher.Flush()
			}
		}
		if err != nil {
			return
		}
	}
}

// watchEvent is the JSON form of a watch event; the object is kept as decoded JSON.
type watchEvent struct {
	Type   string                 `json:"type"`
	Object map[string]interface{} `json:"object"`
}

func metadata(obj map[string]interface{}) map[string]interface{} {
	m, _ := obj["metadata"].(map[string]interface{})
	if m == nil {
		m = map[string]interface{}{}
	}
	return m
}

func key(obj map[string]interface{}) string {
	m := metadata(obj)
	return fmt.Sprintf("%v/%v", m["namespace"], m["name"])
}

func (p *faultProxy) recordList(body []byte) {
	var list struct {
		Items []map[string]interface{} `json:"items"`
	}
	if json.Unmarshal(body, &list) != nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, item := range list.Items {
		p.lastRV[key(item)] = fmt.Sprint(metadata(item)["resourceVersion"])
	}
}

func (p *faultProxy) serveServicesWatch(w http.ResponseWriter, body io.Reader) {
	flusher, _ := w.(http.Flusher)
	events := make(chan watchEvent)
	go func() {
		defer close(events)
		decoder := json.NewDecoder(bufio.NewReader(body))
		for {
			var e watchEvent
			if decoder.Decode(&e) != nil {
				return
			}
			events <- e
		}
	}()
	encoder := json.NewEncoder(w)
	for {
		p.mu.Lock()
		expire := p.expireWatches
		p.mu.Unlock()
		select {
		case <-expire:
			encoder.Encode(watchEvent{Type: "ERROR", Object: map[string]interface{}{
				"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "Expired", "code": 410,
				"message": "too old resource version: 1 (2)",
			}})
			flusher.Flush()
			return
		case e, ok := <-events:
			if !ok {
				return
			}
			endStream := false
			p.mu.Lock()
			k := key(e.Object)
			if e.Type == "DELETED" && k == p.rewriteDeleteOf {
				if previous, known := p.lastRV[k]; known {
					p.t.Logf("proxy: DELETED %s: resourceVersion %v rewritten to the object's previous %s; ending the watch",
						k, metadata(e.Object)["resourceVersion"], previous)
					metadata(e.Object)["resourceVersion"] = previous
					p.rewriteDeleteOf = ""
					close(p.rewritten)
					p.slowDeletes = true
					endStream = true
				}
			} else if e.Type != "ERROR" && e.Type != "BOOKMARK" {
				p.lastRV[k] = fmt.Sprint(metadata(e.Object)["resourceVersion"])
			}
			pause := e.Type == "DELETED" && p.slowDeletes && !endStream
			p.mu.Unlock()
			encoder.Encode(e)
			flusher.Flush()
			if endStream {
				return
			}
			if pause {
				time.Sleep(3 * time.Second)
			}
		}
	}
}

// rewriteNextDelete arms the watch-path fault for one Service; the returned channel closes once
// the rewritten event has been sent.
func (p *faultProxy) rewriteNextDelete(namespace, name string) <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rewriteDeleteOf = namespace + "/" + name
	p.rewritten = make(chan struct{})
	return p.rewritten
}

// serveStaleZeroLists arms the relist-path fault: Services lists at resourceVersion "0" get
// this earlier answer from now on.
func (p *faultProxy) serveStaleZeroLists(list []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.staleList = list
}

// expireServicesWatches ends every open Services watch with 410 Expired, forcing relists.
func (p *faultProxy) expireServicesWatches() {
	p.mu.Lock()
	defer p.mu.Unlock()
	close(p.expireWatches)
	p.expireWatches = make(chan struct{})
}

// lists returns the Services list requests seen so far (listQueries).
func (p *faultProxy) lists() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string{}, p.listQueries...)
}

// requests returns the resourceVersions of the Services lists and watches seen so far.
func (p *faultProxy) requests() (lists, watches []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string{}, p.listRVs...), append([]string{}, p.watchRVs...)
}

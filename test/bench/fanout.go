package bench

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/idc-lts/kube-1.17/test/harness"
)

// FanOutResult is what a resync cost the apiserver's Endpoints watchers, and what an ordinary
// client saw of the apiserver meanwhile, over the run's measured window.
type FanOutResult struct {
	Watchers int `json:"watchers"`
	// Events and Bytes are the watch events (protobuf frames, bookmarks included) the watchers
	// received in the window, and their size on the wire without HTTP chunking.
	Events int64 `json:"events"`
	Bytes  int64 `json:"bytes"`
	// Restarts counts watches that ended (the apiserver closes a watcher that falls behind) or
	// failed to open in the window, each opened again from a fresh resourceVersion.
	Restarts int64 `json:"restarts"`
	// Probe is the ordinary client's requests during the window.
	Probe ProbeResult `json:"probe"`
}

// endpointsWatchers are W watches on all Endpoints standing in for the kube-proxies and agents
// of W nodes: each its own connection, protobuf like kube-proxy, reading each event's frame and
// discarding it undecoded so that the cost lands on the apiserver and not on this process.
type endpointsWatchers struct {
	events, bytes, restarts atomic.Int64
	cancel                  context.CancelFunc
	running                 sync.WaitGroup
}

// startWatchers opens w watches and returns once each has its response headers.
func startWatchers(b testing.TB, cp *harness.ControlPlane, w int) *endpointsWatchers {
	ctx, cancel := context.WithCancel(context.Background())
	ws := &endpointsWatchers{cancel: cancel}
	// One connection per watcher, as one per node; HTTP/1.1 because the test apiserver serves
	// its insecure port.
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: w, DisableCompression: true}}
	opened := make(chan error, w)
	for i := 0; i < w; i++ {
		ws.running.Add(1)
		go func() {
			defer ws.running.Done()
			ws.watch(ctx, cp, client, opened)
		}()
	}
	for i := 0; i < w; i++ {
		if err := <-opened; err != nil {
			ws.stop()
			b.Fatalf("opening %d Endpoints watches: %v", w, err)
		}
	}
	b.Cleanup(ws.stop)
	return ws
}

// watch keeps one watch open until ctx ends, reporting the first opening on opened.
func (ws *endpointsWatchers) watch(ctx context.Context, cp *harness.ControlPlane, client *http.Client, opened chan<- error) {
	first := true
	for ctx.Err() == nil {
		body, err := openEndpointsWatch(ctx, cp, client)
		if first {
			opened <- err
			first = false
			if err != nil {
				return
			}
		} else if ctx.Err() == nil {
			ws.restarts.Add(1)
		}
		if err != nil {
			time.Sleep(time.Second)
			continue
		}
		ws.discardFrames(body)
		body.Close()
	}
}

// openEndpointsWatch starts a protobuf watch of all Endpoints from the current resourceVersion.
// A watcher that lost its stream starts from now as well: it stands for load, not for a cache.
func openEndpointsWatch(ctx context.Context, cp *harness.ControlPlane, client *http.Client) (io.ReadCloser, error) {
	list, err := cp.Client.CoreV1().Endpoints("").List(metav1.ListOptions{Limit: 1})
	if err != nil {
		return nil, err
	}
	url := fmt.Sprintf("%s/api/v1/endpoints?watch=true&allowWatchBookmarks=true&resourceVersion=%s", cp.URL, list.ResourceVersion)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/vnd.kubernetes.protobuf")
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || !strings.Contains(ct, "protobuf") {
		resp.Body.Close()
		return nil, fmt.Errorf("watching Endpoints: %s, Content-Type %q", resp.Status, ct)
	}
	return resp.Body, nil
}

// discardFrames counts the length-prefixed frames of a protobuf watch stream until it ends.
func (ws *endpointsWatchers) discardFrames(body io.Reader) {
	r := bufio.NewReaderSize(body, 32<<10)
	var header [4]byte
	for {
		if _, err := io.ReadFull(r, header[:]); err != nil {
			return
		}
		n := binary.BigEndian.Uint32(header[:])
		if _, err := r.Discard(int(n)); err != nil {
			return
		}
		ws.events.Add(1)
		ws.bytes.Add(int64(n) + 4)
	}
}

// counts reads the counters, to be subtracted across a window.
func (ws *endpointsWatchers) counts() (events, bytes, restarts int64) {
	return ws.events.Load(), ws.bytes.Load(), ws.restarts.Load()
}

func (ws *endpointsWatchers) stop() {
	ws.cancel()
	ws.running.Wait()
}

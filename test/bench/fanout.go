package bench

import (
	"bufio"
	"bytes"
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

	"google.golang.org/protobuf/encoding/protowire"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

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
	// failed in the window; Relists, those after which the watcher had to list every Endpoints
	// again because its resourceVersion had left the watch cache.
	Restarts int64 `json:"restarts"`
	Relists  int64 `json:"relists"`
	// Probe is the ordinary client's requests during the window.
	Probe ProbeResult `json:"probe"`
}

// endpointsWatchers are W watches on all Endpoints standing in for the kube-proxies and agents
// of W nodes: each its own connection, protobuf like kube-proxy, and each behaving as client-go's
// reflector does: it watches again from the last resourceVersion it saw when the apiserver ends
// its watch, and lists everything again (from the watch cache, resourceVersion=0, as a 1.17
// reflector does) when that version has left the watch cache. Events are read frame by frame and
// discarded undecoded, but for the last one of a stream, so that the cost lands on the apiserver.
// The first resourceVersion comes from a one-item list: starting W watchers does not cost W full
// lists before the measurement.
type endpointsWatchers struct {
	events, bytes, restarts, relists atomic.Int64
	cancel                           context.CancelFunc
	running                          sync.WaitGroup
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

// watch runs one watcher until ctx ends, reporting its first watch's opening on opened.
func (ws *endpointsWatchers) watch(ctx context.Context, cp *harness.ControlPlane, client *http.Client, opened chan<- error) {
	list, err := cp.Client.CoreV1().Endpoints("").List(metav1.ListOptions{Limit: 1})
	if err != nil {
		opened <- err
		return
	}
	rv := list.ResourceVersion
	first := true
	for ctx.Err() == nil {
		body, err := get(ctx, client, cp.URL+"/api/v1/endpoints?watch=true&allowWatchBookmarks=true&resourceVersion="+rv)
		if first {
			opened <- err
			first = false
			if err != nil {
				return
			}
		}
		expired := false
		if err == nil {
			var last string
			last, expired, err = ws.readEvents(body)
			body.Close()
			if last != "" {
				rv = last
			}
		}
		if ctx.Err() != nil {
			return
		}
		ws.restarts.Add(1)
		if err != nil {
			time.Sleep(time.Second)
			continue
		}
		if expired {
			ws.relists.Add(1)
			// A failed relist keeps the expired version, which expires again and relists again, as
			// a reflector retries; watching from "" instead would replay every Endpoints as ADDED.
			if fresh, err := relist(ctx, client, cp.URL); err != nil {
				time.Sleep(time.Second)
			} else {
				rv = fresh
			}
		}
	}
}

// get starts a protobuf GET and returns its body.
func get(ctx context.Context, client *http.Client, url string) (io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", protobufType)
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || !strings.HasPrefix(ct, protobufType) {
		resp.Body.Close()
		return nil, fmt.Errorf("GET %s: %s, Content-Type %q", url, resp.Status, ct)
	}
	return resp.Body, nil
}

const protobufType = "application/vnd.kubernetes.protobuf"

// readEvents counts the length-prefixed frames of a protobuf watch stream until it ends, and
// returns the resourceVersion of its last event, or expired if that was the apiserver saying the
// version is too old.
func (ws *endpointsWatchers) readEvents(body io.Reader) (lastVersion string, expired bool, err error) {
	r := bufio.NewReaderSize(body, 32<<10)
	var header [4]byte
	var frame []byte
	for {
		if _, err := io.ReadFull(r, header[:]); err != nil {
			break
		}
		n := int(binary.BigEndian.Uint32(header[:]))
		if cap(frame) < n {
			frame = make([]byte, n)
		}
		frame = frame[:n]
		if _, err := io.ReadFull(r, frame); err != nil {
			break
		}
		ws.events.Add(1)
		ws.bytes.Add(int64(n) + 4)
	}
	if len(frame) == 0 {
		return "", false, nil
	}
	var event metav1.WatchEvent
	if err := event.Unmarshal(frame); err != nil {
		return "", false, fmt.Errorf("decoding a watch event: %v", err)
	}
	if event.Type == string(watch.Error) {
		return "", true, nil
	}
	var endpoints v1.Endpoints
	if err := unwrap(event.Object.Raw, &endpoints); err != nil {
		return "", false, err
	}
	return endpoints.ResourceVersion, false, nil
}

// relist reads every Endpoints as a 1.17 reflector does after an expired watch, and returns the
// list's resourceVersion.
func relist(ctx context.Context, client *http.Client, base string) (string, error) {
	body, err := get(ctx, client, base+"/api/v1/endpoints?resourceVersion=0")
	if err != nil {
		return "", err
	}
	defer body.Close()
	data, err := io.ReadAll(body)
	if err != nil {
		return "", err
	}
	// Decode only the list's metadata, its first field.
	var fields rawMessage
	if err := unwrap(data, &fields); err != nil {
		return "", err
	}
	for len(fields) > 0 {
		num, typ, n := protowire.ConsumeTag(fields)
		if n < 0 {
			break
		}
		fields = fields[n:]
		if num == 1 && typ == protowire.BytesType {
			value, _ := protowire.ConsumeBytes(fields)
			var meta metav1.ListMeta
			if err := meta.Unmarshal(value); err != nil {
				return "", err
			}
			return meta.ResourceVersion, nil
		}
		if n = protowire.ConsumeFieldValue(num, typ, fields); n < 0 {
			break
		}
		fields = fields[n:]
	}
	return "", fmt.Errorf("an Endpoints list without metadata")
}

// rawMessage keeps a protobuf message's fields undecoded.
type rawMessage []byte

func (m *rawMessage) Unmarshal(data []byte) error {
	*m = data
	return nil
}

// protobufMagic starts every object the apiserver encodes in protobuf, before a runtime.Unknown.
var protobufMagic = []byte{0x6b, 0x38, 0x73, 0x00}

// unwrap decodes an object the apiserver encoded in protobuf.
func unwrap(data []byte, into interface{ Unmarshal([]byte) error }) error {
	if !bytes.HasPrefix(data, protobufMagic) {
		return fmt.Errorf("not a protobuf-encoded object")
	}
	var unknown runtime.Unknown
	if err := unknown.Unmarshal(data[len(protobufMagic):]); err != nil {
		return err
	}
	return into.Unmarshal(unknown.Raw)
}

// counts reads the counters, to be subtracted across a window.
func (ws *endpointsWatchers) counts() (events, bytes, restarts, relists int64) {
	return ws.events.Load(), ws.bytes.Load(), ws.restarts.Load(), ws.relists.Load()
}

func (ws *endpointsWatchers) stop() {
	ws.cancel()
	ws.running.Wait()
}

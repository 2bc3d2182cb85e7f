package bench

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
)

// encode writes obj as the apiserver does in protobuf: magic, then a runtime.Unknown.
func encode(t *testing.T, obj runtime.Object) []byte {
	var buf bytes.Buffer
	if err := protobuf.NewSerializer(scheme.Scheme, scheme.Scheme).Encode(obj, &buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// watchStream frames events as the apiserver's protobuf watch does.
func watchStream(t *testing.T, events ...watch.Event) []byte {
	var stream bytes.Buffer
	frames := protobuf.LengthDelimitedFramer.NewFrameWriter(&stream)
	for _, e := range events {
		e.Object.GetObjectKind().SetGroupVersionKind(v1.SchemeGroupVersion.WithKind(kindOf(e.Object)))
		data, err := (&metav1.WatchEvent{Type: string(e.Type), Object: runtime.RawExtension{Raw: encode(t, e.Object)}}).Marshal()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := frames.Write(data); err != nil {
			t.Fatal(err)
		}
	}
	return stream.Bytes()
}

func kindOf(obj runtime.Object) string {
	if _, ok := obj.(*metav1.Status); ok {
		return "Status"
	}
	return "Endpoints"
}

func endpointsAt(rv string) *v1.Endpoints {
	return &v1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "b", ResourceVersion: rv}}
}

func TestReadEvents(t *testing.T) {
	tests := []struct {
		name        string
		events      []watch.Event
		wantVersion string
		wantExpired bool
	}{
		{name: "an empty stream resumes from where it was"},
		{name: "the last event's version", wantVersion: "42",
			events: []watch.Event{{Type: watch.Added, Object: endpointsAt("41")}, {Type: watch.Modified, Object: endpointsAt("42")}}},
		{name: "a bookmark's version", wantVersion: "50",
			events: []watch.Event{{Type: watch.Modified, Object: endpointsAt("41")}, {Type: watch.Bookmark, Object: endpointsAt("50")}}},
		{name: "too old: relist", wantExpired: true,
			events: []watch.Event{{Type: watch.Error, Object: &metav1.Status{Code: http.StatusGone, Reason: metav1.StatusReasonExpired}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := &endpointsWatchers{}
			version, expired, err := ws.readEvents(bytes.NewReader(watchStream(t, tt.events...)))
			if err != nil {
				t.Fatal(err)
			}
			if version != tt.wantVersion || expired != tt.wantExpired {
				t.Errorf("got version %q, expired %v; want %q, %v", version, expired, tt.wantVersion, tt.wantExpired)
			}
			if events, _, _, _ := ws.counts(); events != int64(len(tt.events)) {
				t.Errorf("counted %d events, want %d", events, len(tt.events))
			}
		})
	}
}

func TestRelistReturnsTheListsVersion(t *testing.T) {
	list := &v1.EndpointsList{ListMeta: metav1.ListMeta{ResourceVersion: "77"}, Items: []v1.Endpoints{*endpointsAt("70"), *endpointsAt("71")}}
	list.GetObjectKind().SetGroupVersionKind(v1.SchemeGroupVersion.WithKind("EndpointsList"))
	body := encode(t, list)
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("resourceVersion") != "0" {
			t.Errorf("relisted with %s, want resourceVersion=0 as a 1.17 reflector", r.URL)
		}
		w.Header().Set("Content-Type", protobufType)
		w.Write(body)
	}))
	defer server.Close()
	version, err := relist(context.Background(), server.Client(), server.URL)
	if err != nil {
		t.Fatal(err)
	}
	if version != "77" {
		t.Errorf("relist returned version %q, want 77", version)
	}
}

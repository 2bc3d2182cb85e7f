package registry

import (
	"context"
	"encoding/pem"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// writeCA writes the test server's certificate as a CA file.
func writeCA(t *testing.T, server *httptest.Server) string {
	path := filepath.Join(t.TempDir(), "ca.pem")
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: server.Certificate().Raw})
	if err := os.WriteFile(path, pemBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestPushCountsAndIsIdempotent(t *testing.T) {
	server := httptest.NewTLSServer(ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0))))
	defer server.Close()
	t.Setenv("DOCKER_CONFIG", t.TempDir()) // no credentials of the machine's
	c, err := New(context.Background(), Options{CAFile: writeCA(t, server)})
	if err != nil {
		t.Fatal(err)
	}
	repo, err := c.Repository(strings.TrimPrefix(server.URL, "https://") + "/test/image")
	if err != nil {
		t.Fatal(err)
	}
	img, err := random.Image(1024, 3)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(repo.Tag("v1"), img, c.Remote()...); err != nil {
		t.Fatal(err)
	}
	first := c.Uploaded()
	// 3 layers and the config; the layers' bytes at least.
	if first.Blobs != 4 || first.Manifests != 1 || first.BlobBytes < 3*1024 {
		t.Errorf("first push: %+v, want 4 blobs of >= 3 KiB and 1 manifest", first)
	}
	if err := remote.Write(repo.Tag("v1"), img, c.Remote()...); err != nil {
		t.Fatal(err)
	}
	if again := c.Uploaded(); again != first {
		t.Errorf("second push uploaded %+v more", again.Since(first))
	}
}

func TestPlainHTTPOnlyWhenAsked(t *testing.T) {
	server := httptest.NewServer(ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0))))
	defer server.Close()
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	host := strings.TrimPrefix(server.URL, "http://")
	img, err := random.Image(16, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, plain := range []bool{false, true} {
		c, err := New(context.Background(), Options{PlainHTTP: plain})
		if err != nil {
			t.Fatal(err)
		}
		repo, err := c.Repository(host + "/test/image")
		if err != nil {
			t.Fatal(err)
		}
		err = remote.Write(repo.Tag("v1"), img, c.Remote()...)
		switch {
		case plain && err != nil:
			t.Errorf("PlainHTTP: %v", err)
		case !plain && (err == nil || !strings.Contains(err.Error(), "refusing plain HTTP")):
			t.Errorf("without PlainHTTP, a loopback registry over HTTP: err = %v, want a refusal", err)
		}
	}
}

func TestBadOptions(t *testing.T) {
	notPEM := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(notPEM, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		opts Options
		repo string
		want string
	}{
		{"missing CA file", Options{CAFile: "/nonexistent/ca.pem"}, "", "/nonexistent/ca.pem"},
		{"CA file without a certificate", Options{CAFile: notPEM}, "", "holds no PEM certificate"},
		{"repository without host", Options{}, "kube-scheduler", "names no registry host"},
		{"malformed repository", Options{}, "registry.example.com/Kube Scheduler", "repository"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := New(context.Background(), tc.opts)
			if err == nil && tc.repo != "" {
				_, err = c.Repository(tc.repo)
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want one saying %q", err, tc.want)
			}
		})
	}
}

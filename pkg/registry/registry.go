// Package registry connects to the operator's image registry the way the operator's own tools do:
// credentials from the standard Docker config (DOCKER_CONFIG, ~/.docker/config.json, credential
// helpers) through go-containerregistry's keychain, a private CA from a file, and plain HTTP only
// when asked for. It also counts what a push uploads, so that a second push can say "nothing".
package registry

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync/atomic"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

// Options say how to reach a registry.
type Options struct {
	// CAFile is a PEM bundle of the CAs that sign the registry's certificate, added to the
	// system's.
	CAFile string
	// PlainHTTP allows http:// to the registry. Without it a request over plain HTTP is refused,
	// even to the loopback and private (RFC 1918) addresses that go-containerregistry would
	// otherwise fall back to silently.
	PlainHTTP bool
}

// Client is a configured connection to registries: remote options and the counts of what it
// uploaded.
type Client struct {
	opts    Options
	counter *countingTransport
	remote  []remote.Option
}

// New checks the options (a CA file that cannot be read or holds no certificate is an error
// naming it) and returns a client whose requests are bounded by ctx.
func New(ctx context.Context, opts Options) (*Client, error) {
	base := http.DefaultTransport.(*http.Transport).Clone()
	if opts.CAFile != "" {
		pem, err := os.ReadFile(opts.CAFile)
		if err != nil {
			return nil, fmt.Errorf("registry CA file: %v", err)
		}
		pool, err := x509.SystemCertPool()
		if err != nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("registry CA file %s holds no PEM certificate", opts.CAFile)
		}
		base.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	counter := &countingTransport{inner: base, plainHTTP: opts.PlainHTTP}
	return &Client{opts: opts, counter: counter, remote: []remote.Option{
		remote.WithContext(ctx),
		remote.WithAuthFromKeychain(authn.DefaultKeychain),
		// remote wraps it in its retries, logging and user agent.
		remote.WithTransport(counter),
		remote.WithUserAgent("idc-lts-publish"),
	}}, nil
}

// Remote returns the options for go-containerregistry's remote package.
func (c *Client) Remote() []remote.Option { return c.remote }

// NameOptions are the options to parse references with.
func (c *Client) NameOptions() []name.Option {
	opts := []name.Option{name.StrictValidation}
	if c.opts.PlainHTTP {
		opts = append(opts, name.Insecure)
	}
	return opts
}

// Repository parses a repository reference ("host[:port]/path/component").
func (c *Client) Repository(repo string) (name.Repository, error) {
	if !strings.Contains(repo, "/") {
		return name.Repository{}, fmt.Errorf("repository %q names no registry host", repo)
	}
	r, err := name.NewRepository(repo, c.NameOptions()...)
	if err != nil {
		return name.Repository{}, fmt.Errorf("repository %q: %v", repo, err)
	}
	return r, nil
}

// Uploads is what a client has sent so far.
type Uploads struct {
	Blobs     int64 // blob uploads completed
	BlobBytes int64 // bytes of blob content sent
	Manifests int64 // manifests written (by digest or tag)
}

// Since returns the uploads between earlier and u.
func (u Uploads) Since(earlier Uploads) Uploads {
	return Uploads{Blobs: u.Blobs - earlier.Blobs, BlobBytes: u.BlobBytes - earlier.BlobBytes, Manifests: u.Manifests - earlier.Manifests}
}

// Add returns the sum of u and more.
func (u Uploads) Add(more Uploads) Uploads {
	return Uploads{Blobs: u.Blobs + more.Blobs, BlobBytes: u.BlobBytes + more.BlobBytes, Manifests: u.Manifests + more.Manifests}
}

// Uploaded returns the counts since the client was made.
func (c *Client) Uploaded() Uploads {
	return Uploads{
		Blobs:     c.counter.blobs.Load(),
		BlobBytes: c.counter.blobBytes.Load(),
		Manifests: c.counter.manifests.Load(),
	}
}

// Explain makes a registry's refusal of the credentials say so in words (go-containerregistry
// reports a HEAD's 401 as a bare status code) and passes other errors through.
func Explain(err error) error {
	var te *transport.Error
	if errors.As(err, &te) && te.StatusCode == http.StatusUnauthorized {
		host := ""
		if te.Request != nil {
			host = te.Request.URL.Host
		}
		return fmt.Errorf("%s refused the credentials (401 Unauthorized; they come from DOCKER_CONFIG or ~/.docker/config.json, as docker login writes them): %w", host, err)
	}
	return err
}

// NotFound says whether err is the registry's "no such manifest or blob".
func NotFound(err error) bool {
	var te *transport.Error
	return errors.As(err, &te) && te.StatusCode == http.StatusNotFound
}

// countingTransport refuses plain HTTP unless allowed and counts uploads: a blob upload ends
// with a PUT to .../blobs/uploads/...?digest=, its content goes in PATCH (chunked) or that PUT
// (monolithic) bodies; manifests are PUT to .../manifests/<reference>.
type countingTransport struct {
	inner     http.RoundTripper
	plainHTTP bool

	blobs, blobBytes, manifests atomic.Int64
}

func (t *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme == "http" && !t.plainHTTP {
		return nil, fmt.Errorf("refusing plain HTTP to %s: the registry must speak TLS (allow plain HTTP explicitly to use it without)", req.URL.Host)
	}
	path := req.URL.Path
	upload := strings.Contains(path, "/blobs/uploads/") && (req.Method == http.MethodPatch || req.Method == http.MethodPut)
	if upload && req.Body != nil && req.Body != http.NoBody {
		req.Body = &countingBody{ReadCloser: req.Body, n: &t.blobBytes}
	}
	resp, err := t.inner.RoundTrip(req)
	if err != nil || resp.StatusCode >= 300 {
		return resp, err
	}
	switch {
	case upload && req.Method == http.MethodPut && req.URL.Query().Get("digest") != "":
		t.blobs.Add(1)
	case req.Method == http.MethodPut && strings.Contains(path, "/manifests/"):
		t.manifests.Add(1)
	}
	return resp, nil
}

type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}

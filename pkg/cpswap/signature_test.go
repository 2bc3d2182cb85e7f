package cpswap

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/idc-lts/kube-1.17/pkg/registry"
)

// publicKey writes a cosign-format public key (ECDSA P-256, PKIX PEM) and returns its path.
func publicKey(t *testing.T) string {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "cosign.pub")
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

const someDigest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// TestVerifySignatureIsBounded: a registry that accepts the connection and never answers fails
// the check within --registry-timeout, naming it, instead of hanging cpswap.
func TestVerifySignatureIsBounded(t *testing.T) {
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var held sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	held.Add(1)
	go func() {
		defer held.Done()
		for {
			c, err := listener.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c) // accepted, never answered
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		listener.Close()
		held.Wait()
		for _, c := range conns {
			c.Close()
		}
	})
	for _, ref := range []string{
		listener.Addr().String() + "/k8s/kube-controller-manager@" + someDigest,
		listener.Addr().String() + "/k8s/kube-controller-manager:v1.17.3-idc.2@" + someDigest,
	} {
		image, err := ParseImage(ref, "kube-controller-manager")
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		_, err = VerifySignature(context.Background(), image, publicKey(t), registry.Options{PlainHTTP: true}, 300*time.Millisecond)
		if took := time.Since(start); took > 10*time.Second {
			t.Errorf("%s: took %v with a 300ms bound", ref, took)
		}
		wantCode(t, err, ExitRefused, "the registry did not answer within 300ms (--registry-timeout)")
	}
}

// TestVerifySignatureRefusesATagThatNamesAnotherDigest: :v1.17.3-idc.2@<digest of idc.1> would
// record the wrong release in the history; the tag is resolved in the registry and a mismatch
// refused, before the signature is read.
func TestVerifySignatureRefusesATagThatNamesAnotherDigest(t *testing.T) {
	server := httptest.NewServer(ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(server.Close)
	host := strings.TrimPrefix(server.URL, "http://")
	repo := host + "/k8s/kube-controller-manager"
	client, err := registry.New(context.Background(), registry.Options{PlainHTTP: true})
	if err != nil {
		t.Fatal(err)
	}
	digests := map[string]string{}
	for _, tag := range []string{"v1.17.3-idc.1", "v1.17.3-idc.2"} {
		img, err := random.Image(64, 1)
		if err != nil {
			t.Fatal(err)
		}
		ref, err := name.NewTag(repo+":"+tag, client.NameOptions()...)
		if err != nil {
			t.Fatal(err)
		}
		if err := remote.Write(ref, img, client.Remote()...); err != nil {
			t.Fatal(err)
		}
		d, _ := img.Digest()
		digests[tag] = d.String()
	}
	image, err := ParseImage(fmt.Sprintf("%s:v1.17.3-idc.2@%s", repo, digests["v1.17.3-idc.1"]), "kube-controller-manager")
	if err != nil {
		t.Fatal(err)
	}
	_, err = VerifySignature(context.Background(), image, publicKey(t), registry.Options{PlainHTTP: true}, time.Minute)
	wantCode(t, err, ExitRefused, "points at "+digests["v1.17.3-idc.2"]+" in the registry, not at the digest given ("+digests["v1.17.3-idc.1"]+")")
	// The tag that does name the digest passes on to the signature, which this image lacks.
	image, _ = ParseImage(fmt.Sprintf("%s:v1.17.3-idc.1@%s", repo, digests["v1.17.3-idc.1"]), "kube-controller-manager")
	_, err = VerifySignature(context.Background(), image, publicKey(t), registry.Options{PlainHTTP: true}, time.Minute)
	wantCode(t, err, ExitRefused, "signature:")
}

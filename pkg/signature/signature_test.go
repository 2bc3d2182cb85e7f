package signature

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/secure-systems-lab/go-securesystemslib/encrypted"

	"github.com/idc-lts/kube-1.17/pkg/registry"
)

// writeKeyPair writes a key pair in cosign's format (what cosign generate-key-pair writes: an
// encrypted PKCS#8 ECDSA P-256 key and a PKIX public key) and returns the paths.
func writeKeyPair(t *testing.T, password string) (string, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	sealed, err := encrypted.Encrypt(der, []byte(password))
	if err != nil {
		t.Fatal(err)
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	keyPath, pubPath := filepath.Join(dir, "cosign.key"), filepath.Join(dir, "cosign.pub")
	for path, block := range map[string]*pem.Block{
		keyPath: {Type: "ENCRYPTED SIGSTORE PRIVATE KEY", Bytes: sealed},
		pubPath: {Type: "PUBLIC KEY", Bytes: pub},
	} {
		if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return keyPath, pubPath
}

func loadPair(t *testing.T) (*Signer, *Verifier) {
	keyPath, pubPath := writeKeyPair(t, "pw")
	signer, err := LoadPrivateKey(keyPath, []byte("pw"))
	if err != nil {
		t.Fatal(err)
	}
	verifier, err := LoadPublicKey(pubPath)
	if err != nil {
		t.Fatal(err)
	}
	return signer, verifier
}

// pushed starts an in-memory registry, pushes two random images and returns their repository,
// digests and the client options.
func pushed(t *testing.T) (name.Repository, v1.Hash, v1.Hash, []remote.Option) {
	server := httptest.NewServer(ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(server.Close)
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	c, err := registry.New(context.Background(), registry.Options{PlainHTTP: true})
	if err != nil {
		t.Fatal(err)
	}
	repo, err := c.Repository(strings.TrimPrefix(server.URL, "http://") + "/idc/kube-scheduler")
	if err != nil {
		t.Fatal(err)
	}
	var digests []v1.Hash
	for i := 0; i < 2; i++ {
		img, err := random.Image(64, 1)
		if err != nil {
			t.Fatal(err)
		}
		d, err := img.Digest()
		if err != nil {
			t.Fatal(err)
		}
		if err := remote.Write(repo.Digest(d.String()), img, c.Remote()...); err != nil {
			t.Fatal(err)
		}
		digests = append(digests, d)
	}
	return repo, digests[0], digests[1], c.Remote()
}

func TestSignVerify(t *testing.T) {
	repo, digest, otherDigest, opts := pushed(t)
	ours, ourKey := loadPair(t)
	theirs, theirKey := loadPair(t)

	if err := Verify(repo, digest, ourKey, opts...); !errors.Is(err, ErrNotSigned) {
		t.Fatalf("unsigned: err = %v, want ErrNotSigned", err)
	}
	signed, first, err := Sign(repo, digest, ours, opts...)
	if err != nil || !signed {
		t.Fatalf("Sign: signed=%v, %v", signed, err)
	}
	if err := Verify(repo, digest, ourKey, opts...); err != nil {
		t.Fatalf("Verify with the signing key: %v", err)
	}
	err = Verify(repo, digest, theirKey, opts...)
	if err == nil || !strings.Contains(err.Error(), "none of its 1 signature(s) verifies") {
		t.Fatalf("Verify with another key: err = %v", err)
	}
	// Signing again with the same key changes nothing.
	signed, again, err := Sign(repo, digest, ours, opts...)
	if err != nil || signed || again != first {
		t.Fatalf("second Sign: signed=%v digest %s (first %s), %v", signed, again, first, err)
	}
	// Another key's signature goes beside ours; both verify.
	if signed, _, err := Sign(repo, digest, theirs, opts...); err != nil || !signed {
		t.Fatalf("Sign with another key: signed=%v, %v", signed, err)
	}
	for _, v := range []*Verifier{ourKey, theirKey} {
		if err := Verify(repo, digest, v, opts...); err != nil {
			t.Errorf("after both signed: %v", err)
		}
	}
	// A signature of one digest stored under another's tag does not vouch for it.
	sigs, err := remote.Image(Tag(repo, digest, "sig"), opts...)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(Tag(repo, otherDigest, "sig"), sigs, opts...); err != nil {
		t.Fatal(err)
	}
	err = Verify(repo, otherDigest, ourKey, opts...)
	if err == nil || !strings.Contains(err.Error(), "signs "+digest.String()) {
		t.Fatalf("a copied signature: err = %v, want one naming the digest it signs", err)
	}
}

func TestLoadKeys(t *testing.T) {
	keyPath, pubPath := writeKeyPair(t, "right")
	if _, err := LoadPrivateKey(keyPath, []byte("wrong")); err == nil || !strings.Contains(err.Error(), "wrong COSIGN_PASSWORD") {
		t.Errorf("wrong password: err = %v", err)
	}
	if _, err := LoadPrivateKey(pubPath, []byte("right")); err == nil || !strings.Contains(err.Error(), `a "PUBLIC KEY" block`) {
		t.Errorf("a public key as the private one: err = %v", err)
	}
	if _, err := LoadPublicKey(keyPath); err == nil || !strings.Contains(err.Error(), "no PEM \"PUBLIC KEY\" block") {
		t.Errorf("a private key as the public one: err = %v", err)
	}
	if _, err := LoadPublicKey(filepath.Join(t.TempDir(), "missing.pub")); err == nil || !strings.Contains(err.Error(), "missing.pub") {
		t.Errorf("a missing key: err = %v", err)
	}
}

// TestSignBlob: a blob signature verifies with the signer's key only, and only for the content signed.
func TestSignBlob(t *testing.T) {
	ours, ourKey := loadPair(t)
	_, theirKey := loadPair(t)
	sums := []byte("0123abcd  bin/linux-amd64/kubelet\n")
	sig, err := ours.SignBlob(sums)
	if err != nil {
		t.Fatal(err)
	}
	if err := ourKey.VerifyBlob(sums, sig+"\n"); err != nil {
		t.Errorf("our key refuses our signature: %v", err)
	}
	for name, tc := range map[string]struct {
		key  *Verifier
		data []byte
		sig  string
		want string
	}{
		"another key":     {theirKey, sums, sig, "does not verify"},
		"changed content": {ourKey, []byte("0123abce  bin/linux-amd64/kubelet\n"), sig, "does not verify"},
		"not base64":      {ourKey, sums, "%%%", "not base64"},
	} {
		if err := tc.key.VerifyBlob(tc.data, tc.sig); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: VerifyBlob = %v, want an error saying %q", name, err, tc.want)
		}
	}
}

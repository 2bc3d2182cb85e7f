// Package signature signs and verifies image digests in cosign's key-pair format, stored in the
// registry beside the image, so that `cosign verify --key cosign.pub` accepts our signatures as
// is and cpswap can check them without cosign:
//
//   - the signature of REPO@sha256:HEX is an OCI image manifest tagged REPO:sha256-HEX.sig;
//   - each of its layers is one signature: the layer's content is a "simple signing" payload
//     naming the signed digest, its annotation dev.cosignproject.cosign/signature is the
//     base64 of the signature of that payload (ECDSA P-256 with SHA-256 for cosign's keys);
//   - keys are cosign's: an "ENCRYPTED SIGSTORE PRIVATE KEY" (scrypt and secretbox, as
//     go-securesystemslib writes it; the password is COSIGN_PASSWORD's), and a PEM public key.
//
// Signatures are ECDSA P-256 over SHA-256 in ASN.1, made and checked with the standard library:
// sigstore's Go libraries (sigstore/sigstore 1.8 and later) need go-logr 1.x, which breaks the
// controller-runtime 0.5 that our envtest harness shares this module with, and the format is
// small; the registry test checks every signature we write with cosign's own CLI. Nothing is
// uploaded to a transparency log (our users' masters are air-gapped), so cosign verifies them with
// --insecure-ignore-tlog=true, the flag cosign asks for with any key-pair signature made offline.
package signature

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/secure-systems-lab/go-securesystemslib/encrypted"
)

// Cosign's names for the parts of a signature.
const (
	SimpleSigningMediaType types.MediaType = "application/vnd.dev.cosign.simplesigning.v1+json"
	SignatureAnnotation                    = "dev.cosignproject.cosign/signature"
	payloadType                            = "cosign container image signature"
	// PasswordEnv holds the private key's password, as for cosign.
	PasswordEnv = "COSIGN_PASSWORD"
)

// Tag is where the signatures of digest live in repo (cosign's convention).
func Tag(repo name.Repository, digest v1.Hash, suffix string) name.Tag {
	return repo.Tag(fmt.Sprintf("%s-%s.%s", digest.Algorithm, digest.Hex, suffix))
}

// payload is cosign's simple-signing payload.
type payload struct {
	Critical struct {
		Identity struct {
			DockerReference string `json:"docker-reference"`
		} `json:"identity"`
		Image struct {
			DockerManifestDigest string `json:"docker-manifest-digest"`
		} `json:"image"`
		Type string `json:"type"`
	} `json:"critical"`
	Optional map[string]interface{} `json:"optional"`
}

func newPayload(repo name.Repository, digest v1.Hash) ([]byte, error) {
	var p payload
	p.Critical.Identity.DockerReference = repo.Name()
	p.Critical.Image.DockerManifestDigest = digest.String()
	p.Critical.Type = payloadType
	return json.Marshal(p)
}

// Signer signs with a cosign private key.
type Signer struct{ key *ecdsa.PrivateKey }

// Verifier checks signatures with a public key.
type Verifier struct{ key *ecdsa.PublicKey }

func (s *Signer) sign(payload []byte) ([]byte, error) {
	h := sha256.Sum256(payload)
	return ecdsa.SignASN1(rand.Reader, s.key, h[:])
}

// Verifier is the signer's public half.
func (s *Signer) Verifier() *Verifier { return &Verifier{key: &s.key.PublicKey} }

func (v *Verifier) verify(sig, payload []byte) bool {
	h := sha256.Sum256(payload)
	return ecdsa.VerifyASN1(v.key, h[:], sig)
}

// SignBlob signs a file's content as `cosign sign-blob --key` does: the base64 of an ECDSA
// signature of its SHA-256, which `cosign verify-blob --key cosign.pub --signature FILE
// --insecure-ignore-tlog=true` accepts.
func (s *Signer) SignBlob(data []byte) (string, error) {
	sig, err := s.sign(data)
	if err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(sig), nil
}

// VerifyBlob checks a SignBlob signature (surrounding whitespace ignored) of data.
func (v *Verifier) VerifyBlob(data []byte, sig string) error {
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(sig))
	if err != nil {
		return fmt.Errorf("the signature is not base64: %v", err)
	}
	if !v.verify(raw, data) {
		return errors.New("the signature does not verify with this key")
	}
	return nil
}

// LoadPrivateKey reads a cosign private key, decrypting it with password.
func LoadPrivateKey(path string, password []byte) (*Signer, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("signing key: %v", err)
	}
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, fmt.Errorf("signing key %s: not PEM", path)
	}
	if block.Type != "ENCRYPTED SIGSTORE PRIVATE KEY" && block.Type != "ENCRYPTED COSIGN PRIVATE KEY" {
		return nil, fmt.Errorf("signing key %s: a %q block, want a cosign key pair's private key (cosign generate-key-pair)", path, block.Type)
	}
	der, err := encrypted.Decrypt(block.Bytes, password)
	if err != nil {
		return nil, fmt.Errorf("signing key %s: cannot decrypt it (wrong %s?): %v", path, PasswordEnv, err)
	}
	key, err := x509.ParsePKCS8PrivateKey(der)
	if err != nil {
		return nil, fmt.Errorf("signing key %s: %v", path, err)
	}
	ec, ok := key.(*ecdsa.PrivateKey)
	if !ok || ec.Curve != elliptic.P256() {
		return nil, fmt.Errorf("signing key %s: a %T, want ECDSA P-256 (cosign generate-key-pair's)", path, key)
	}
	return &Signer{key: ec}, nil
}

// LoadPublicKey reads a PEM public key (cosign.pub).
func LoadPublicKey(path string) (*Verifier, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("verification key: %v", err)
	}
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "PUBLIC KEY" {
		return nil, fmt.Errorf("verification key %s: no PEM \"PUBLIC KEY\" block (want cosign.pub)", path)
	}
	key, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("verification key %s: %v", path, err)
	}
	ec, ok := key.(*ecdsa.PublicKey)
	if !ok || ec.Curve != elliptic.P256() {
		return nil, fmt.Errorf("verification key %s: a %T, want ECDSA P-256 (cosign generate-key-pair's)", path, key)
	}
	return &Verifier{key: ec}, nil
}

// signedBy says whether the signature image holds a signature of digest that verifier accepts.
// It returns how many signatures it read, and for each one that failed, why.
func signedBy(sigs v1.Image, digest v1.Hash, verifier *Verifier) (bool, int, []string, error) {
	m, err := sigs.Manifest()
	if err != nil {
		return false, 0, nil, err
	}
	layers, err := sigs.Layers()
	if err != nil {
		return false, 0, nil, err
	}
	var why []string
	n := 0
	for i, desc := range m.Layers {
		if desc.MediaType != SimpleSigningMediaType {
			continue
		}
		n++
		sig, err := base64.StdEncoding.DecodeString(desc.Annotations[SignatureAnnotation])
		if err != nil || len(sig) == 0 {
			why = append(why, fmt.Sprintf("signature %d: no base64 signature annotation", n))
			continue
		}
		rc, err := layers[i].Compressed()
		if err != nil {
			return false, n, why, err
		}
		var body bytes.Buffer
		_, err = body.ReadFrom(rc)
		rc.Close()
		if err != nil {
			return false, n, why, err
		}
		if !verifier.verify(sig, body.Bytes()) {
			why = append(why, fmt.Sprintf("signature %d: does not verify with this key", n))
			continue
		}
		var p payload
		if err := json.Unmarshal(body.Bytes(), &p); err != nil {
			why = append(why, fmt.Sprintf("signature %d: payload: %v", n, err))
			continue
		}
		if p.Critical.Type != payloadType || p.Critical.Image.DockerManifestDigest != digest.String() {
			why = append(why, fmt.Sprintf("signature %d: signs %s, not %s", n, p.Critical.Image.DockerManifestDigest, digest))
			continue
		}
		return true, n, why, nil
	}
	return false, n, why, nil
}

// ErrNotSigned: the registry holds no signature for the digest at all.
var ErrNotSigned = errors.New("not signed")

// Verify checks that repo holds a signature of digest that verifier accepts.
func Verify(repo name.Repository, digest v1.Hash, verifier *Verifier, opts ...remote.Option) error {
	tag := Tag(repo, digest, "sig")
	sigs, err := remote.Image(tag, opts...)
	if err != nil {
		if isNotFound(err) {
			return fmt.Errorf("%s@%s: %w (no %s in the registry)", repo, digest, ErrNotSigned, tag)
		}
		return fmt.Errorf("%s@%s: reading its signatures %s: %v", repo, digest, tag, err)
	}
	ok, n, why, err := signedBy(sigs, digest, verifier)
	switch {
	case err != nil:
		return fmt.Errorf("%s@%s: reading its signatures %s: %v", repo, digest, tag, err)
	case ok:
		return nil
	case n == 0:
		return fmt.Errorf("%s@%s: %w (%s holds no cosign signature)", repo, digest, ErrNotSigned, tag)
	default:
		return fmt.Errorf("%s@%s: none of its %d signature(s) verifies with the given key (%s)", repo, digest, n, strings.Join(why, "; "))
	}
}

// Sign stores a signature of repo@digest made by signer, beside the signatures already there
// (other keys' stay). It does nothing when a signature of signer's key is there already and says
// so: signed is false then.
func Sign(repo name.Repository, digest v1.Hash, signer *Signer, opts ...remote.Option) (signed bool, sigDigest v1.Hash, err error) {
	tag := Tag(repo, digest, "sig")
	base := empty.Image
	existing, err := remote.Image(tag, opts...)
	switch {
	case err == nil:
		ok, _, _, err := signedBy(existing, digest, signer.Verifier())
		if err != nil {
			return false, v1.Hash{}, fmt.Errorf("reading the signatures %s: %v", tag, err)
		}
		if ok {
			d, err := existing.Digest()
			return false, d, err
		}
		base = existing
	case !isNotFound(err):
		return false, v1.Hash{}, fmt.Errorf("reading the signatures %s: %v", tag, err)
	}
	body, err := newPayload(repo, digest)
	if err != nil {
		return false, v1.Hash{}, err
	}
	sig, err := signer.sign(body)
	if err != nil {
		return false, v1.Hash{}, fmt.Errorf("signing %s@%s: %v", repo, digest, err)
	}
	img, err := mutate.Append(base, mutate.Addendum{
		Layer:       static.NewLayer(body, SimpleSigningMediaType),
		Annotations: map[string]string{SignatureAnnotation: base64.StdEncoding.EncodeToString(sig)},
	})
	if err != nil {
		return false, v1.Hash{}, err
	}
	if base == empty.Image {
		img = mutate.ConfigMediaType(mutate.MediaType(img, types.OCIManifestSchema1), types.OCIConfigJSON)
	}
	if err := remote.Write(tag, img, opts...); err != nil {
		return false, v1.Hash{}, fmt.Errorf("writing the signature %s: %v", tag, err)
	}
	d, err := img.Digest()
	return true, d, err
}

// isNotFound: the registry has no such manifest (or repository).
func isNotFound(err error) bool {
	var te *transport.Error
	return errors.As(err, &te) && te.StatusCode == http.StatusNotFound
}

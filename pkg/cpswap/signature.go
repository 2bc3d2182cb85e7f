package cpswap

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/idc-lts/kube-1.17/pkg/registry"
	"github.com/idc-lts/kube-1.17/pkg/signature"
)

// VerifySignature checks, in the image's registry, that the image is signed by the cosign key in
// keyFile. The image must be pinned by digest: a tag could move between this check and the
// kubelet's pull; a tag given beside the digest must point at it in the registry, or the history
// would name the wrong release. It runs before anything changes; an error refuses the change.
// Every registry call is bounded by timeout: a registry that accepts the connection and never
// answers fails the check instead of hanging cpswap.
func VerifySignature(ctx context.Context, image ImageRef, keyFile string, opts registry.Options, timeout time.Duration) (string, error) {
	if image.Digest == "" {
		return "", refused("--verify-key checks a digest: give --image as REGISTRY/COMPONENT:TAG@sha256:DIGEST (%s names none)", image.Ref)
	}
	if timeout <= 0 {
		return "", &Failure{Code: ExitUsage, Err: fmt.Errorf("--registry-timeout must be positive, got %v", timeout)}
	}
	verifier, err := signature.LoadPublicKey(keyFile)
	if err != nil {
		return "", &Failure{Code: ExitUsage, Err: err}
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	client, err := registry.New(ctx, opts)
	if err != nil {
		return "", &Failure{Code: ExitUsage, Err: err}
	}
	// unanswered names a registry that let the deadline pass, whatever error the call gave.
	unanswered := func(what string, err error) error {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return refused("%s: the registry did not answer within %v (--registry-timeout): %v", what, timeout, err)
		}
		return refused("%s: %v", what, err)
	}
	ref, err := name.NewDigest(image.Ref, client.NameOptions()...)
	if err != nil {
		return "", refused("image %q: %v", image.Ref, err)
	}
	digest, err := v1.NewHash(ref.DigestStr())
	if err != nil {
		return "", refused("image %q: %v", image.Ref, err)
	}
	if image.Tag != "" {
		tag := ref.Context().Tag(image.Tag)
		desc, err := remote.Head(tag, client.Remote()...)
		if err != nil {
			return "", unanswered(fmt.Sprintf("tag %s", tag), err)
		}
		if desc.Digest != digest {
			return "", refused("tag %s points at %s in the registry, not at the digest given (%s): give the digest the tag names, or the tag of that digest", tag, desc.Digest, digest)
		}
	}
	if err := signature.Verify(ref.Context(), digest, verifier, client.Remote()...); err != nil {
		return "", unanswered("signature", err)
	}
	return fmt.Sprintf("%s is signed by the key in %s", ref, keyFile), nil
}

package cpswap

import (
	"context"
	"fmt"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/idc-lts/kube-1.17/build/registry"
	"github.com/idc-lts/kube-1.17/build/signature"
)

// VerifySignature checks, in the image's registry, that the image is signed by the cosign key in
// keyFile. The image must be pinned by digest: a tag could move between this check and the
// kubelet's pull. It runs before anything changes; an error refuses the change.
func VerifySignature(ctx context.Context, image ImageRef, keyFile string, opts registry.Options) (string, error) {
	if image.Digest == "" {
		return "", refused("--verify-key checks a digest: give --image as REGISTRY/COMPONENT:TAG@sha256:DIGEST (%s names none)", image.Ref)
	}
	verifier, err := signature.LoadPublicKey(keyFile)
	if err != nil {
		return "", &Failure{Code: ExitUsage, Err: err}
	}
	client, err := registry.New(ctx, opts)
	if err != nil {
		return "", &Failure{Code: ExitUsage, Err: err}
	}
	ref, err := name.NewDigest(image.Ref, client.NameOptions()...)
	if err != nil {
		return "", refused("image %q: %v", image.Ref, err)
	}
	digest, err := v1.NewHash(ref.DigestStr())
	if err != nil {
		return "", refused("image %q: %v", image.Ref, err)
	}
	if err := signature.Verify(ref.Context(), digest, verifier, client.Remote()...); err != nil {
		return "", refused("signature: %v", err)
	}
	return fmt.Sprintf("%s is signed by the key in %s", ref, keyFile), nil
}

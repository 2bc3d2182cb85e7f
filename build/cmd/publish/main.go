// Command publish pushes a cut release to the operator's registry (make publish runs it):
//
//	publish -release _output/release/v1.17.3-idc.1 -registry registry.example.com/k8s \
//	  [-ca-file ca.pem] [-plain-http] [-force] [-signing-key cosign.key]
//
// Credentials come from the standard Docker config (DOCKER_CONFIG or ~/.docker/config.json); the
// signing key's password from COSIGN_PASSWORD. It prints, per component, the pinned reference and
// what it uploaded; a second push of the same release uploads nothing and says so.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/idc-lts/kube-1.17/build/publish"
	"github.com/idc-lts/kube-1.17/pkg/registry"
	"github.com/idc-lts/kube-1.17/pkg/signature"
)

func main() {
	var o publish.Options
	var ro registry.Options
	var signingKey string
	flag.StringVar(&o.ReleaseDir, "release", "", "release directory, _output/release/<version> (required)")
	flag.StringVar(&o.Registry, "registry", "", "host[:port]/path to push to; must be the REGISTRY the release was cut with (required)")
	flag.StringVar(&ro.CAFile, "ca-file", "", "PEM file of the CA that signs the registry's certificate (added to the system's)")
	flag.BoolVar(&ro.PlainHTTP, "plain-http", false, "allow plain HTTP to the registry (refused otherwise, even on loopback)")
	flag.BoolVar(&o.Force, "force", false, "move a version tag that points to another digest")
	flag.StringVar(&signingKey, "signing-key", "", "cosign private key to sign each index with (password in "+signature.PasswordEnv+")")
	flag.Parse()
	if err := run(o, ro, signingKey); err != nil {
		fmt.Fprintf(os.Stderr, "publish: %v\n", err)
		os.Exit(1)
	}
}

func run(o publish.Options, ro registry.Options, signingKey string) error {
	if o.ReleaseDir == "" || o.Registry == "" || flag.NArg() > 0 {
		return fmt.Errorf("usage: publish -release DIR -registry HOST[:PORT]/PATH [-ca-file F] [-plain-http] [-force] [-signing-key F]")
	}
	if signingKey != "" {
		signer, err := signature.LoadPrivateKey(signingKey, []byte(os.Getenv(signature.PasswordEnv)))
		if err != nil {
			return err
		}
		o.Signer = signer
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	client, err := registry.New(ctx, ro)
	if err != nil {
		return err
	}
	o.Log = func(format string, args ...interface{}) { fmt.Fprintf(os.Stderr, format+"\n", args...) }
	start := time.Now()
	pushed, err := publish.Push(client, o)
	for _, p := range pushed {
		fmt.Println(describe(p))
	}
	if err != nil {
		return err
	}
	total := client.Uploaded()
	if total.Blobs == 0 && total.Manifests == 0 {
		fmt.Printf("nothing uploaded: the registry held every blob, manifest, signature and tag of this release already (%.1f s)\n", time.Since(start).Seconds())
	} else {
		fmt.Printf("uploaded %d blobs (%s) and %d manifests in %.1f s\n", total.Blobs, size(total.BlobBytes), total.Manifests, time.Since(start).Seconds())
	}
	return nil
}

func describe(p publish.Pushed) string {
	s := fmt.Sprintf("%s: %s\n  sbom %s", p.Component, p.Reference, p.SBOM)
	if p.Signature.Hex != "" {
		s += fmt.Sprintf("\n  signature %s", p.Signature)
	} else {
		s += "\n  unsigned"
	}
	s += fmt.Sprintf("\n  uploaded %d blobs (%s), %d manifests", p.Uploads.Blobs, size(p.Uploads.BlobBytes), p.Uploads.Manifests)
	if p.TagMoved {
		s += "\n  the tag was moved from another digest (-force)"
	}
	return s
}

func size(n int64) string {
	return fmt.Sprintf("%.1f MB", float64(n)/1e6)
}

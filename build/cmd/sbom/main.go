// Command sbom writes the release's SPDX JSON SBOM: sbom -release V -epoch N -lock FILE BINARY...
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/idc-lts/kube-1.17/build/sbom"
)

func main() {
	release := flag.String("release", "", "release version")
	epoch := flag.Int64("epoch", 0, "creation time (SOURCE_DATE_EPOCH)")
	lock := flag.String("lock", "images/base-packages.lock", "pinned Debian packages of the image base")
	flag.Parse()
	if err := run(*release, time.Unix(*epoch, 0), *lock, flag.Args()); err != nil {
		fmt.Fprintf(os.Stderr, "sbom: %v\n", err)
		os.Exit(1)
	}
}

func run(release string, created time.Time, lock string, binaries []string) error {
	if release == "" || len(binaries) == 0 {
		return fmt.Errorf("usage: sbom -release VERSION [-epoch N] [-lock FILE] BINARY...")
	}
	data, err := os.ReadFile(lock)
	if err != nil {
		return err
	}
	debs, err := sbom.ParseLock(string(data))
	if err != nil {
		return fmt.Errorf("%s: %v", lock, err)
	}
	doc, err := sbom.Build(release, created, binaries, debs)
	if err != nil {
		return err
	}
	out := json.NewEncoder(os.Stdout)
	out.SetIndent("", "  ")
	return out.Encode(doc)
}

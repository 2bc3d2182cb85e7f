// Command sbom writes the release's SPDX JSON SBOM, or checks one:
//
//	sbom -release V -epoch N -lock FILE BINARY...   writes the document to stdout
//	sbom -check FILE BINARY...                       reads FILE back as SPDX 2.3 (spdx/tools-golang),
//	                                                 validates it and requires each binary's sha256 in it
package main

import (
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"time"

	spdxjson "github.com/spdx/tools-golang/json"
	"github.com/spdx/tools-golang/spdxlib"

	"github.com/idc-lts/kube-1.17/build/sbom"
)

func main() {
	release := flag.String("release", "", "release version")
	epoch := flag.Int64("epoch", 0, "creation time (SOURCE_DATE_EPOCH)")
	lock := flag.String("lock", "images/base/packages.lock", "pinned Debian packages of the image base")
	check := flag.String("check", "", "an SBOM to check instead of writing one")
	flag.Parse()
	var err error
	if *check != "" {
		err = checkDocument(*check, flag.Args())
	} else {
		err = run(*release, time.Unix(*epoch, 0), *lock, flag.Args())
	}
	if err != nil {
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
	return spdxjson.Write(doc, os.Stdout, spdxjson.Indent("  "))
}

func checkDocument(path string, binaries []string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	doc, err := spdxjson.Read(f)
	if err != nil {
		return fmt.Errorf("%s is not SPDX JSON: %v", path, err)
	}
	if err := spdxlib.ValidateDocument(doc); err != nil {
		return fmt.Errorf("%s: %v", path, err)
	}
	if doc.SPDXVersion != "SPDX-2.3" {
		return fmt.Errorf("%s: spdxVersion %q, want SPDX-2.3", path, doc.SPDXVersion)
	}
	sums := map[string]bool{}
	for _, p := range doc.Packages {
		for _, c := range p.PackageChecksums {
			sums[c.Value] = true
		}
	}
	for _, binary := range binaries {
		data, err := os.ReadFile(binary)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		if !sums[hex.EncodeToString(sum[:])] {
			return fmt.Errorf("%s does not describe %s (sha256 %x)", path, binary, sum)
		}
	}
	fmt.Printf("sbom: %s is valid SPDX 2.3: %d packages, %d relationships, every binary's sha256 in it\n", path, len(doc.Packages), len(doc.Relationships))
	return nil
}

// Command upstream-source writes the pinned upstream source tree into a new directory.
// It downloads every pinned module zip through the Go module proxy, checks each zip's hash
// against the pin file, and only then extracts the zips. On any error the destination is not
// created.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/idc-lts/kube-1.17/build/upstreamsrc"
)

func main() {
	pinFile := flag.String("pins", "build/upstream.sum", "pin file: module, version, h1: hash per line")
	dest := flag.String("dest", "", "directory to create with the source tree (must not exist)")
	goCmd := flag.String("go", "go", "go command used to download modules")
	flag.Parse()
	if err := run(*pinFile, *dest, *goCmd); err != nil {
		fmt.Fprintf(os.Stderr, "upstream-source: %v\n", err)
		os.Exit(1)
	}
}

func run(pinFile, dest, goCmd string) error {
	if dest == "" {
		return fmt.Errorf("-dest is required")
	}
	if _, err := os.Lstat(dest); err == nil {
		return fmt.Errorf("%s already exists; remove it first", dest)
	}
	f, err := os.Open(pinFile)
	if err != nil {
		return err
	}
	pins, err := upstreamsrc.ParsePins(f, pinFile)
	f.Close()
	if err != nil {
		return err
	}

	zips := make([]string, len(pins))
	for i, pin := range pins {
		if zips[i], err = upstreamsrc.Download(goCmd, pin); err != nil {
			return err
		}
		if err := upstreamsrc.VerifyZip(zips[i], pin); err != nil {
			return fmt.Errorf("%v (pin file %s)", err, pinFile)
		}
	}

	tmp, err := os.MkdirTemp(filepath.Dir(dest), ".upstream-source-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	for i, pin := range pins {
		if err := upstreamsrc.Extract(zips[i], pin, tmp); err != nil {
			return err
		}
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return err
	}
	return os.Rename(tmp, dest)
}

// Command verify-upstream checks patches/UPSTREAM.md against upstream's CHANGELOG-1.17.md, read
// from a pinned, hash-verified k8s.io/kubernetes module zip (build/changelog.sum): every entry of
// the releases after our base has one row with a decision the series backs.
package main

import (
	"archive/zip"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/idc-lts/kube-1.17/build/triage"
	"github.com/idc-lts/kube-1.17/build/upstreamsrc"
)

func main() {
	pins := flag.String("pins", "build/changelog.sum", "pin of the module whose CHANGELOG-1.17.md is read")
	record := flag.String("record", "patches/UPSTREAM.md", "the triage record")
	series := flag.String("series", "patches/series", "the patch series")
	first := flag.Int("first", 4, "first 1.17 patch release after our base")
	last := flag.Int("last", 17, "last 1.17 patch release")
	goCmd := flag.String("go", "go", "go command used to download modules")
	flag.Parse()
	summary, problems, err := run(*pins, *record, *series, *goCmd, *first, *last)
	if err != nil {
		fmt.Fprintf(os.Stderr, "verify-upstream: %v\n", err)
		os.Exit(1)
	}
	if len(problems) > 0 {
		for _, p := range problems {
			fmt.Fprintf(os.Stderr, "verify-upstream: %s: %s\n", *record, p)
		}
		os.Exit(1)
	}
	fmt.Printf("verify-upstream: %s: %s\n", *record, summary)
}

func run(pinFile, recordFile, seriesFile, goCmd string, first, last int) (string, []string, error) {
	f, err := os.Open(pinFile)
	if err != nil {
		return "", nil, err
	}
	pins, err := upstreamsrc.ParsePins(f, pinFile)
	f.Close()
	if err != nil {
		return "", nil, err
	}
	if len(pins) != 1 {
		return "", nil, fmt.Errorf("%s: want one pin, got %d", pinFile, len(pins))
	}
	pin := pins[0]
	zipPath, err := upstreamsrc.Download(goCmd, pin)
	if err != nil {
		return "", nil, err
	}
	if err := upstreamsrc.VerifyZip(zipPath, pin); err != nil {
		return "", nil, fmt.Errorf("%v (pin file %s)", err, pinFile)
	}
	changelog, err := readZipFile(zipPath, pin.String()+"/CHANGELOG/CHANGELOG-1.17.md")
	if err != nil {
		return "", nil, err
	}
	entries, err := triage.ParseChangelog(changelog, "1.17", first, last)
	if err != nil {
		return "", nil, fmt.Errorf("%s CHANGELOG-1.17.md: %v", pin, err)
	}
	text, err := os.ReadFile(recordFile)
	if err != nil {
		return "", nil, err
	}
	rec, err := triage.ParseRecord(string(text))
	if err != nil {
		return "", nil, err
	}
	patches, err := seriesPatches(seriesFile)
	if err != nil {
		return "", nil, err
	}
	return triage.Summary(rec), triage.Check(entries, rec, patches), nil
}

func readZipFile(zipPath, name string) (string, error) {
	z, err := zip.OpenReader(zipPath)
	if err != nil {
		return "", err
	}
	defer z.Close()
	for _, f := range z.File {
		if f.Name == name {
			r, err := f.Open()
			if err != nil {
				return "", err
			}
			defer r.Close()
			data, err := io.ReadAll(r)
			return string(data), err
		}
	}
	return "", fmt.Errorf("%s has no %s", zipPath, name)
}

// seriesPatches maps each patch's number to its text.
func seriesPatches(seriesFile string) (map[string]string, error) {
	data, err := os.ReadFile(seriesFile)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, line := range strings.Split(string(data), "\n") {
		name := strings.TrimSpace(strings.SplitN(line, "#", 2)[0])
		if name == "" {
			continue
		}
		text, err := os.ReadFile(filepath.Join(filepath.Dir(seriesFile), name))
		if err != nil {
			return nil, err
		}
		out[strings.SplitN(name, "-", 2)[0]] = string(text)
	}
	return out, nil
}

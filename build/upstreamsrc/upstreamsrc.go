// Package upstreamsrc reconstructs the pinned upstream Kubernetes source tree from module zips
// fetched through the Go module proxy, refusing any zip whose hash differs from the pin.
package upstreamsrc

import (
	"archive/zip"
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"

	"golang.org/x/mod/module"
	"golang.org/x/mod/sumdb/dirhash"
)

// RootModule is extracted at the top of the tree; every other pinned module is a staging repo.
const RootModule = "k8s.io/kubernetes"

// Pin is one line of the pin file: a module version and the go.sum hash of its zip.
type Pin struct {
	Path    string
	Version string
	Sum     string
}

// Dir is where the module's files live inside the reconstructed tree.
func (p Pin) Dir() string {
	if p.Path == RootModule {
		return "."
	}
	return path.Join("staging/src", p.Path)
}

func (p Pin) String() string { return p.Path + "@" + p.Version }

// ParsePins reads a pin file: go.sum-style lines "module version h1:hash"; '#' starts a comment.
func ParsePins(r io.Reader, name string) ([]Pin, error) {
	var pins []Pin
	seen := map[string]bool{}
	scanner := bufio.NewScanner(r)
	for lineNo := 1; scanner.Scan(); lineNo++ {
		line := strings.TrimSpace(scanner.Text())
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = strings.TrimSpace(line[:i])
		}
		if line == "" {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) != 3 || !strings.HasPrefix(fields[2], "h1:") {
			return nil, fmt.Errorf("%s:%d: want \"module version h1:hash\", got %q", name, lineNo, line)
		}
		pin := Pin{Path: fields[0], Version: fields[1], Sum: fields[2]}
		if err := module.Check(pin.Path, pin.Version); err != nil {
			return nil, fmt.Errorf("%s:%d: %v", name, lineNo, err)
		}
		if seen[pin.Path] {
			return nil, fmt.Errorf("%s:%d: module %s is pinned twice", name, lineNo, pin.Path)
		}
		seen[pin.Path] = true
		pins = append(pins, pin)
	}
	if err := scanner.Err(); err != nil {
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	if !seen[RootModule] {
		return nil, fmt.Errorf("%s: %s is not pinned", name, RootModule)
	}
	return pins, nil
}

// Download fetches the module zip through the Go command (module proxy and checksum database)
// and returns the path of the zip in the module cache.
func Download(goCmd string, pin Pin) (string, error) {
	cmd := exec.Command(goCmd, "mod", "download", "-json", pin.String())
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	var result struct{ Zip, Sum, Error string }
	if jsonErr := json.Unmarshal(out, &result); jsonErr != nil && err == nil {
		err = jsonErr
	}
	if result.Error != "" {
		return "", fmt.Errorf("downloading %s: %s", pin, result.Error)
	}
	if err != nil {
		return "", fmt.Errorf("downloading %s: %v", pin, err)
	}
	return result.Zip, nil
}

// VerifyZip recomputes the zip's hash instead of trusting the module cache's record of it.
func VerifyZip(zipPath string, pin Pin) error {
	got, err := dirhash.HashZip(zipPath, dirhash.Hash1)
	if err != nil {
		return fmt.Errorf("hashing %s for %s: %v", zipPath, pin, err)
	}
	if got != pin.Sum {
		return fmt.Errorf("checksum mismatch for %s: %s hashes to %s, pinned %s", pin, zipPath, got, pin.Sum)
	}
	return nil
}

// Extract unpacks the module zip into root/pin.Dir(). Files get mode 0644 and directories 0755,
// as module zips carry no modes, so the tree is the same on every machine.
func Extract(zipPath string, pin Pin, root string) error {
	zr, err := zip.OpenReader(zipPath)
	if err != nil {
		return fmt.Errorf("opening %s: %v", zipPath, err)
	}
	defer zr.Close()
	prefix := pin.String() + "/"
	dest := filepath.Join(root, filepath.FromSlash(pin.Dir()))
	for _, f := range zr.File {
		if !strings.HasPrefix(f.Name, prefix) || strings.HasSuffix(f.Name, "/") {
			return fmt.Errorf("%s: unexpected entry %q", zipPath, f.Name)
		}
		rel := strings.TrimPrefix(f.Name, prefix)
		if !filepath.IsLocal(rel) {
			return fmt.Errorf("%s: entry %q escapes the tree", zipPath, f.Name)
		}
		if err := extractFile(f, filepath.Join(dest, filepath.FromSlash(rel))); err != nil {
			return fmt.Errorf("%s: %v", zipPath, err)
		}
	}
	return nil
}

func extractFile(f *zip.File, target string) error {
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return err
	}
	in, err := f.Open()
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

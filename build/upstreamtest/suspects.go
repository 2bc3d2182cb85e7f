package upstreamtest

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/idc-lts/kube-1.17/build/patchmeta"
)

// PatchedPackages maps each non-build patch of the series (the ones stock does not carry) to the
// Go import paths whose non-test files it changes; a patch that changes go.mod changes every
// package ("*").
func PatchedPackages(patchesDir, seriesFile string) (map[string][]string, error) {
	series, err := patchmeta.ReadSeries(seriesFile)
	if err != nil {
		return nil, err
	}
	changes := map[string][]string{}
	for _, name := range series {
		file := filepath.Join(patchesDir, name)
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, err
		}
		p, err := patchmeta.ParseBytes(name, data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		if p.Value("Category") == "build" {
			continue
		}
		changes[p.Number()] = changedImportPaths(data)
	}
	return changes, nil
}

// changedImportPaths reads a patch's diff --git lines.
func changedImportPaths(patch []byte) []string {
	set := map[string]bool{}
	scanner := bufio.NewScanner(bytes.NewReader(patch))
	scanner.Buffer(make([]byte, 1<<20), 16<<20)
	for scanner.Scan() {
		fields := strings.Fields(scanner.Text())
		if len(fields) != 4 || fields[0] != "diff" || fields[1] != "--git" {
			continue
		}
		file := strings.TrimPrefix(fields[3], "b/")
		switch {
		case file == "go.mod":
			set["*"] = true
		case strings.HasSuffix(file, ".go") && !strings.HasSuffix(file, "_test.go"):
			set[importPath(path.Dir(file))] = true
		}
	}
	var paths []string
	for p := range set {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	return paths
}

// importPath is the import path of a directory of the upstream tree (staging modules by their
// own paths), as build/lib.sh's changed_packages says it.
func importPath(dir string) string {
	if rest, ok := strings.CutPrefix(dir, "staging/src/"); ok {
		return rest
	}
	return "k8s.io/kubernetes/" + dir
}

// Suspects answers, for a test package of the tree, which patches change code it imports
// (its tests' imports included), by go list -deps -test; it remembers each package's answer.
type Suspects struct {
	Tree    string
	Env     []string
	Patches map[string][]string
	known   map[string]string
}

// Of names the patches, e.g. "0006 0014 0019", or says why it cannot.
func (s *Suspects) Of(pkg string) string {
	if answer, ok := s.known[pkg]; ok {
		return answer
	}
	cmd := exec.Command("go", "list", "-deps", "-test", "-f", "{{.ImportPath}}", "./"+pkg)
	cmd.Dir, cmd.Env = s.Tree, append(os.Environ(), s.Env...)
	out, err := cmd.Output()
	var answer string
	if err != nil {
		answer = fmt.Sprintf("(unknown: go list -deps ./%s: %v)", pkg, err)
	} else {
		deps := map[string]bool{}
		for _, line := range strings.Fields(string(out)) {
			deps[line] = true
		}
		answer = strings.Join(patchesAmong(s.Patches, deps), " ")
		if answer == "" {
			answer = "none"
		}
	}
	if s.known == nil {
		s.known = map[string]string{}
	}
	s.known[pkg] = answer
	return answer
}

// patchesAmong lists, in order, the patches that change one of deps.
func patchesAmong(patches map[string][]string, deps map[string]bool) []string {
	var hit []string
	for number, paths := range patches {
		for _, p := range paths {
			if p == "*" || deps[p] {
				hit = append(hit, number)
				break
			}
		}
	}
	sort.Strings(hit)
	return hit
}

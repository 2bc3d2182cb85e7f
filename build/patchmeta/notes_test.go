package patchmeta

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNotesListEveryCVEOfTheSeries checks, on the real series, that the release notes' CVE
// summary names each CVE: field of every patch once, and nothing else.
func TestNotesListEveryCVEOfTheSeries(t *testing.T) {
	series := filepath.Join("..", "..", "patches", "series")
	names, err := ReadSeries(series)
	if err != nil {
		t.Fatal(err)
	}
	var patches []*Patch
	want := map[string]bool{}
	for _, name := range names {
		p, err := Parse(filepath.Join(filepath.Dir(series), name))
		if err != nil {
			t.Fatal(err)
		}
		patches = append(patches, p)
		// Read the file's own lines, not through the parser under test.
		data, _ := os.ReadFile(filepath.Join(filepath.Dir(series), name))
		header, _, _ := strings.Cut(string(data), "\n---\n")
		for _, line := range strings.Split(header, "\n") {
			if cve, ok := strings.CutPrefix(line, "CVE: "); ok {
				want[cve] = true
			}
		}
	}
	if len(want) == 0 {
		t.Fatal("no patch has a CVE: field")
	}
	var notes strings.Builder
	if err := WriteNotes(&notes, Release{Version: "v1.17.3-idc.0", Upstream: "v1.17.3", GoToolchain: "go", SeriesCommit: "c"}, patches); err != nil {
		t.Fatal(err)
	}
	var summary string
	for _, line := range strings.Split(notes.String(), "\n") {
		if strings.HasPrefix(line, "CVEs fixed (") {
			summary = line
		}
	}
	if summary == "" {
		t.Fatalf("no 'CVEs fixed' line in the release notes:\n%s", notes.String())
	}
	for cve := range want {
		if !strings.Contains(summary, cve+",") && !strings.Contains(summary, cve+".") {
			t.Errorf("release notes' summary lacks %s: %s", cve, summary)
		}
	}
	if listed := strings.Count(summary, "CVE-"); listed != len(want) {
		t.Errorf("release notes list %d CVEs, the patches %d: %s", listed, len(want), summary)
	}
	for _, p := range patches {
		if !strings.Contains(notes.String(), "### "+p.Subject+"\n") {
			t.Errorf("release notes lack a section for %s", p.File)
		}
	}
}

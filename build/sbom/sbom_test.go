package sbom

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParseLock(t *testing.T) {
	tests := []struct {
		name    string
		input   string
		want    int
		wantErr string
	}{
		{name: "comments and packages", input: "# pins\nbusybox-static amd64 1:1.35 abc\nca-certificates all 2025 def\n", want: 2},
		{name: "missing field", input: "busybox-static amd64 1:1.35\n", wantErr: "line 1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseLock(tc.input)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || len(got) != tc.want {
				t.Fatalf("got %v, %v; want %d packages", got, err, tc.want)
			}
		})
	}
}

// A binary of this repository that links golang.org/x/mod stands in for the components.
func TestBuildListsLinkedModules(t *testing.T) {
	binary := filepath.Join(t.TempDir(), "upstream-source")
	if out, err := exec.Command("go", "build", "-o", binary, "../cmd/upstream-source").CombinedOutput(); err != nil {
		t.Fatalf("building a test binary: %v\n%s", err, out)
	}
	doc, err := Build("v0.0.0-test", time.Unix(0, 0), []string{binary}, []DebianPackage{{"busybox-static", "amd64", "1", "abc"}})
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, p := range doc.Packages {
		names[p.Name] = true
	}
	if !names["golang.org/x/mod"] {
		t.Errorf("no linked module found among %d packages", len(doc.Packages))
	}
	if !names["busybox-static"] {
		t.Error("base package missing")
	}
	if _, err := Build("v", time.Unix(0, 0), []string{"/nonexistent"}, nil); err == nil {
		t.Error("missing binary: no error")
	}
}

package sbom

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	spdxjson "github.com/spdx/tools-golang/json"
	"github.com/spdx/tools-golang/spdxlib"
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

// testBinary builds a binary of this repository that links golang.org/x/mod, to stand in for the
// components.
func testBinary(t *testing.T) string {
	t.Helper()
	binary := filepath.Join(t.TempDir(), "upstream-source")
	if out, err := exec.Command("go", "build", "-o", binary, "../cmd/upstream-source").CombinedOutput(); err != nil {
		t.Fatalf("building a test binary: %v\n%s", err, out)
	}
	return binary
}

func TestBuildListsLinkedModules(t *testing.T) {
	binary := testBinary(t)
	doc, err := Build("v0.0.0-test", time.Unix(0, 0), []string{binary}, []DebianPackage{{"busybox-static", "amd64", "1", "abc"}})
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, p := range doc.Packages {
		names[p.PackageName] = true
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

// TestWrittenDocumentIsValidSPDX writes the document as the release does and reads it back with
// spdx/tools-golang's parser: it must be SPDX 2.3 JSON whose relationships name only elements the
// document has, and every package must carry what SPDX 2.3 requires of it.
func TestWrittenDocumentIsValidSPDX(t *testing.T) {
	binary := testBinary(t)
	doc, err := Build("v0.0.0-test", time.Unix(0, 0), []string{binary}, []DebianPackage{{"busybox-static", "amd64", "1:1.35", "abc"}})
	if err != nil {
		t.Fatal(err)
	}
	var written bytes.Buffer
	if err := spdxjson.Write(doc, &written, spdxjson.Indent("  ")); err != nil {
		t.Fatal(err)
	}
	read, err := spdxjson.Read(bytes.NewReader(written.Bytes()))
	if err != nil {
		t.Fatalf("tools-golang cannot read the document back: %v\n%s", err, written.String())
	}
	if err := spdxlib.ValidateDocument(read); err != nil {
		t.Errorf("invalid document: %v", err)
	}
	if read.SPDXVersion != "SPDX-2.3" || read.DataLicense != "CC0-1.0" || read.CreationInfo == nil || len(read.CreationInfo.Creators) == 0 {
		t.Errorf("document header: version %q, data license %q, creation info %+v", read.SPDXVersion, read.DataLicense, read.CreationInfo)
	}
	if len(read.Packages) != len(doc.Packages) || len(read.Relationships) != len(doc.Relationships) {
		t.Errorf("read back %d packages and %d relationships, wrote %d and %d", len(read.Packages), len(read.Relationships), len(doc.Packages), len(doc.Relationships))
	}
	described, err := spdxlib.GetDescribedPackageIDs(read)
	if err != nil || len(described) != 2 {
		t.Errorf("described packages %v (%v), want the binary and the base package", described, err)
	}
	for _, p := range read.Packages {
		if p.PackageName == "" || p.PackageSPDXIdentifier == "" || p.PackageDownloadLocation == "" {
			t.Errorf("package %+v lacks a name, an SPDXID or a downloadLocation", p)
		}
	}
	if !strings.Contains(written.String(), `"SPDXID": "SPDXRef-DOCUMENT"`) {
		t.Errorf("the document's own SPDXID is not SPDXRef-DOCUMENT:\n%.400s", written.String())
	}
}

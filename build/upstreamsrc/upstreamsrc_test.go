package upstreamsrc

import (
	"archive/zip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/dirhash"
)

func TestParsePins(t *testing.T) {
	const kube = "k8s.io/kubernetes v1.17.3 h1:zWCppkLfHM+hoLqfbsrQ0cJnYw+4vAvedI92oQnjo/Q=\n"
	tests := []struct {
		name    string
		input   string
		want    []Pin
		wantErr string
	}{
		{
			name:  "comments and blank lines",
			input: "# pins\n\n" + kube + "k8s.io/api v0.17.3 h1:abc= # staging\n",
			want: []Pin{
				{Path: "k8s.io/kubernetes", Version: "v1.17.3", Sum: "h1:zWCppkLfHM+hoLqfbsrQ0cJnYw+4vAvedI92oQnjo/Q="},
				{Path: "k8s.io/api", Version: "v0.17.3", Sum: "h1:abc="},
			},
		},
		{name: "missing hash", input: kube + "k8s.io/api v0.17.3\n", wantErr: "pins:2: want"},
		{name: "not an h1 hash", input: kube + "k8s.io/api v0.17.3 sha256:abc\n", wantErr: "pins:2: want"},
		{name: "bad version", input: kube + "k8s.io/api 0.17.3 h1:abc=\n", wantErr: "pins:2:"},
		{name: "pinned twice", input: kube + kube, wantErr: "pinned twice"},
		{name: "no root module", input: "k8s.io/api v0.17.3 h1:abc=\n", wantErr: "k8s.io/kubernetes is not pinned"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParsePins(strings.NewReader(tc.input), "pins")
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("pin %d = %v, want %v", i, got[i], tc.want[i])
				}
			}
		})
	}
}

func TestPinDir(t *testing.T) {
	for pin, want := range map[Pin]string{
		{Path: "k8s.io/kubernetes"}: ".",
		{Path: "k8s.io/client-go"}:  "staging/src/k8s.io/client-go",
	} {
		if got := pin.Dir(); got != want {
			t.Errorf("%s: Dir() = %q, want %q", pin.Path, got, want)
		}
	}
}

// writeModuleZip writes a module zip with the given files and returns its path and h1: hash.
func writeModuleZip(t *testing.T, pin Pin, files map[string]string) (string, string) {
	t.Helper()
	zipPath := filepath.Join(t.TempDir(), "module.zip")
	f, err := os.Create(zipPath)
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(f)
	for name, content := range files {
		w, err := zw.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(content))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	sum, err := dirhash.HashZip(zipPath, dirhash.Hash1)
	if err != nil {
		t.Fatal(err)
	}
	return zipPath, sum
}

func TestVerifyZip(t *testing.T) {
	pin := Pin{Path: "k8s.io/api", Version: "v0.17.3"}
	zipPath, sum := writeModuleZip(t, pin, map[string]string{"k8s.io/api@v0.17.3/go.mod": "module k8s.io/api\n"})
	pin.Sum = sum
	if err := VerifyZip(zipPath, pin); err != nil {
		t.Fatalf("matching hash: %v", err)
	}
	pin.Sum = "h1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="
	err := VerifyZip(zipPath, pin)
	if err == nil || !strings.Contains(err.Error(), "checksum mismatch for k8s.io/api@v0.17.3") {
		t.Fatalf("tampered hash: error = %v, want a checksum mismatch naming the module", err)
	}
}

func TestExtract(t *testing.T) {
	tests := []struct {
		name    string
		pin     Pin
		files   map[string]string
		want    map[string]string
		wantErr string
	}{
		{
			name:  "staging module goes under staging/src",
			pin:   Pin{Path: "k8s.io/api", Version: "v0.17.3"},
			files: map[string]string{"k8s.io/api@v0.17.3/core/v1/types.go": "package v1\n"},
			want:  map[string]string{"staging/src/k8s.io/api/core/v1/types.go": "package v1\n"},
		},
		{
			name:  "root module at the top",
			pin:   Pin{Path: "k8s.io/kubernetes", Version: "v1.17.3"},
			files: map[string]string{"k8s.io/kubernetes@v1.17.3/go.mod": "module k8s.io/kubernetes\n"},
			want:  map[string]string{"go.mod": "module k8s.io/kubernetes\n"},
		},
		{
			name:    "entry of another module",
			pin:     Pin{Path: "k8s.io/api", Version: "v0.17.3"},
			files:   map[string]string{"k8s.io/evil@v0.17.3/x.go": "package x\n"},
			wantErr: "unexpected entry",
		},
		{
			name:    "entry escaping the tree",
			pin:     Pin{Path: "k8s.io/api", Version: "v0.17.3"},
			files:   map[string]string{"k8s.io/api@v0.17.3/../../../x.go": "package x\n"},
			wantErr: "escapes the tree",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			zipPath, _ := writeModuleZip(t, tc.pin, tc.files)
			root := t.TempDir()
			err := Extract(zipPath, tc.pin, root)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for rel, content := range tc.want {
				got, err := os.ReadFile(filepath.Join(root, rel))
				if err != nil {
					t.Fatal(err)
				}
				if string(got) != content {
					t.Errorf("%s = %q, want %q", rel, got, content)
				}
				if info, _ := os.Stat(filepath.Join(root, rel)); info.Mode().Perm() != 0o644 {
					t.Errorf("%s mode = %v, want 0644", rel, info.Mode())
				}
			}
		})
	}
}

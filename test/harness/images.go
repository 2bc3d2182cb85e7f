package harness

import (
	"archive/tar"
	"encoding/json"
	"fmt"
	"os"
)

// ArchiveReference returns the reference a docker archive's image is tagged with (its only one).
func ArchiveReference(archive string) (string, error) {
	f, err := os.Open(archive)
	if err != nil {
		return "", fmt.Errorf("%v (make images-amd64 builds the release's)", err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if err != nil {
			return "", fmt.Errorf("%s: no manifest.json: %v", archive, err)
		}
		if hdr.Name != "manifest.json" {
			continue
		}
		var manifest []struct{ RepoTags []string }
		if err := json.NewDecoder(tr).Decode(&manifest); err != nil {
			return "", fmt.Errorf("%s: manifest.json: %v", archive, err)
		}
		if len(manifest) != 1 || len(manifest[0].RepoTags) != 1 {
			return "", fmt.Errorf("%s: want one image with one tag, manifest.json has %+v", archive, manifest)
		}
		return manifest[0].RepoTags[0], nil
	}
}

// Package sbom writes an SPDX 2.3 JSON document of what the release binaries link: the Go
// modules recorded in each binary's build information, and the Debian packages of the image base.
package sbom

import (
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"
)

// Document is the subset of SPDX 2.3 this project fills in.
type Document struct {
	SPDXVersion       string         `json:"spdxVersion"`
	DataLicense       string         `json:"dataLicense"`
	SPDXID            string         `json:"SPDXID"`
	Name              string         `json:"name"`
	DocumentNamespace string         `json:"documentNamespace"`
	CreationInfo      CreationInfo   `json:"creationInfo"`
	Packages          []Package      `json:"packages"`
	Relationships     []Relationship `json:"relationships"`
}

type CreationInfo struct {
	Created  string   `json:"created"`
	Creators []string `json:"creators"`
}

type Package struct {
	SPDXID           string        `json:"SPDXID"`
	Name             string        `json:"name"`
	VersionInfo      string        `json:"versionInfo,omitempty"`
	DownloadLocation string        `json:"downloadLocation"`
	FilesAnalyzed    bool          `json:"filesAnalyzed"`
	Checksums        []Checksum    `json:"checksums,omitempty"`
	ExternalRefs     []ExternalRef `json:"externalRefs,omitempty"`
	Comment          string        `json:"comment,omitempty"`
}

type Checksum struct {
	Algorithm     string `json:"algorithm"`
	ChecksumValue string `json:"checksumValue"`
}

type ExternalRef struct {
	ReferenceCategory string `json:"referenceCategory"`
	ReferenceType     string `json:"referenceType"`
	ReferenceLocator  string `json:"referenceLocator"`
}

type Relationship struct {
	Element string `json:"spdxElementId"`
	Type    string `json:"relationshipType"`
	Related string `json:"relatedSpdxElement"`
}

// DebianPackage is one pinned package of the image base.
type DebianPackage struct {
	Name, Arch, Version, SHA256 string
}

var unsafeID = regexp.MustCompile(`[^A-Za-z0-9.-]+`)

func spdxID(parts ...string) string {
	return "SPDXRef-" + unsafeID.ReplaceAllString(strings.Join(parts, "-"), "-")
}

// Build describes the given binaries (each with its Go modules) and the base packages.
func Build(release string, created time.Time, binaries []string, debs []DebianPackage) (*Document, error) {
	doc := &Document{
		SPDXVersion:       "SPDX-2.3",
		DataLicense:       "CC0-1.0",
		SPDXID:            "SPDXRef-DOCUMENT",
		Name:              "kube-1.17-idc " + release,
		DocumentNamespace: "https://idc-lts.invalid/spdx/kube-1.17/" + release,
		CreationInfo:      CreationInfo{Created: created.UTC().Format(time.RFC3339), Creators: []string{"Tool: idc-lts build/cmd/sbom"}},
	}
	modules := map[string]Package{}
	for _, path := range binaries {
		info, err := buildinfo.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", path, err)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		sum := sha256.Sum256(data)
		rel := filepath.Base(filepath.Dir(path)) + "/" + filepath.Base(path)
		binID := spdxID("File", rel)
		doc.Packages = append(doc.Packages, Package{
			SPDXID: binID, Name: filepath.Base(path), VersionInfo: release,
			DownloadLocation: "NOASSERTION",
			Checksums:        []Checksum{{Algorithm: "SHA256", ChecksumValue: hex.EncodeToString(sum[:])}},
			Comment:          fmt.Sprintf("%s, built with %s", rel, info.GoVersion),
		})
		doc.Relationships = append(doc.Relationships, Relationship{"SPDXRef-DOCUMENT", "DESCRIBES", binID})
		for _, dep := range info.Deps {
			m, local := dep, false
			if dep.Replace != nil {
				if strings.HasPrefix(dep.Replace.Path, ".") || strings.HasPrefix(dep.Replace.Path, "/") {
					// A staging module, replaced by its directory in the patched tree.
					local = true
				} else {
					m = dep.Replace
				}
			}
			id := spdxID("GoModule", m.Path, m.Version)
			if _, ok := modules[id]; !ok {
				pkg := Package{
					SPDXID: id, Name: m.Path, VersionInfo: m.Version,
					DownloadLocation: "NOASSERTION",
					ExternalRefs: []ExternalRef{{"PACKAGE-MANAGER", "purl",
						fmt.Sprintf("pkg:golang/%s@%s", m.Path, m.Version)}},
				}
				switch {
				case local:
					pkg.Comment = "built from " + dep.Replace.Path + " of the patched source tree"
				case m.Sum != "":
					pkg.Comment = "go.sum " + m.Sum
				}
				if dep.Replace != nil && !local && dep.Replace.Path != dep.Path {
					pkg.Comment += "; replaces " + dep.Path + " " + dep.Version
				}
				modules[id] = pkg
			}
			doc.Relationships = append(doc.Relationships, Relationship{binID, "CONTAINS", id})
		}
	}
	ids := make([]string, 0, len(modules))
	for id := range modules {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		doc.Packages = append(doc.Packages, modules[id])
	}
	for _, d := range debs {
		id := spdxID("DebianPackage", d.Name, d.Arch)
		doc.Packages = append(doc.Packages, Package{
			SPDXID: id, Name: d.Name, VersionInfo: d.Version, DownloadLocation: "NOASSERTION",
			Checksums:    []Checksum{{Algorithm: "SHA256", ChecksumValue: d.SHA256}},
			ExternalRefs: []ExternalRef{{"PACKAGE-MANAGER", "purl", fmt.Sprintf("pkg:deb/debian/%s@%s?arch=%s", d.Name, d.Version, d.Arch)}},
			Comment:      "image base layer (images/base-packages.lock)",
		})
		doc.Relationships = append(doc.Relationships, Relationship{"SPDXRef-DOCUMENT", "DESCRIBES", id})
	}
	return doc, nil
}

// ParseLock reads images/base-packages.lock.
func ParseLock(data string) ([]DebianPackage, error) {
	var out []DebianPackage
	for i, line := range strings.Split(data, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 4 {
			return nil, fmt.Errorf("line %d: want \"package arch version sha256\", got %q", i+1, line)
		}
		out = append(out, DebianPackage{Name: f[0], Arch: f[1], Version: f[2], SHA256: f[3]})
	}
	return out, nil
}

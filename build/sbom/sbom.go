// Package sbom makes the SPDX 2.3 document of what the release binaries link: the Go modules
// recorded in each binary's build information, and the Debian packages of the image base. The
// document model, JSON writer and reader are spdx/tools-golang's.
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

	"github.com/spdx/tools-golang/spdx"
	"github.com/spdx/tools-golang/spdx/v2/common"
)

// DebianPackage is one pinned package of the image base.
type DebianPackage struct {
	Name, Arch, Version, SHA256 string
}

var unsafeID = regexp.MustCompile(`[^A-Za-z0-9.-]+`)

// spdxID is an element ID ("SPDXRef-" is added when written).
func spdxID(parts ...string) common.ElementID {
	return common.ElementID(unsafeID.ReplaceAllString(strings.Join(parts, "-"), "-"))
}

func describes(doc *spdx.Document, a, b common.ElementID, relationship string) {
	doc.Relationships = append(doc.Relationships, &spdx.Relationship{
		RefA: common.MakeDocElementID("", string(a)), RefB: common.MakeDocElementID("", string(b)), Relationship: relationship,
	})
}

func purl(locator string) []*spdx.PackageExternalReference {
	return []*spdx.PackageExternalReference{{Category: "PACKAGE-MANAGER", RefType: "purl", Locator: locator}}
}

// Build describes the given binaries (each with its Go modules) and the base packages.
func Build(release string, created time.Time, binaries []string, debs []DebianPackage) (*spdx.Document, error) {
	doc := &spdx.Document{
		SPDXVersion:       spdx.Version,
		DataLicense:       spdx.DataLicense,
		SPDXIdentifier:    "DOCUMENT",
		DocumentName:      "kube-1.17-idc " + release,
		DocumentNamespace: "https://idc-lts.invalid/spdx/kube-1.17/" + release,
		CreationInfo: &spdx.CreationInfo{
			Created:  created.UTC().Format(time.RFC3339),
			Creators: []common.Creator{{CreatorType: "Tool", Creator: "idc-lts build/cmd/sbom"}},
		},
	}
	modules := map[common.ElementID]*spdx.Package{}
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
		doc.Packages = append(doc.Packages, &spdx.Package{
			PackageSPDXIdentifier: binID, PackageName: filepath.Base(path), PackageVersion: release,
			PackageDownloadLocation: "NOASSERTION",
			PackageChecksums:        []common.Checksum{{Algorithm: common.SHA256, Value: hex.EncodeToString(sum[:])}},
			PackageComment:          fmt.Sprintf("%s, built with %s", rel, info.GoVersion),
		})
		describes(doc, "DOCUMENT", binID, "DESCRIBES")
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
				pkg := &spdx.Package{
					PackageSPDXIdentifier: id, PackageName: m.Path, PackageVersion: m.Version,
					PackageDownloadLocation:   "NOASSERTION",
					PackageExternalReferences: purl(fmt.Sprintf("pkg:golang/%s@%s", m.Path, m.Version)),
				}
				switch {
				case local:
					pkg.PackageComment = "built from " + dep.Replace.Path + " of the patched source tree"
				case m.Sum != "":
					pkg.PackageComment = "go.sum " + m.Sum
				}
				if dep.Replace != nil && !local && dep.Replace.Path != dep.Path {
					pkg.PackageComment += "; replaces " + dep.Path + " " + dep.Version
				}
				modules[id] = pkg
			}
			describes(doc, binID, id, "CONTAINS")
		}
	}
	ids := make([]common.ElementID, 0, len(modules))
	for id := range modules {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	for _, id := range ids {
		doc.Packages = append(doc.Packages, modules[id])
	}
	for _, d := range debs {
		id := spdxID("DebianPackage", d.Name, d.Arch)
		doc.Packages = append(doc.Packages, &spdx.Package{
			PackageSPDXIdentifier: id, PackageName: d.Name, PackageVersion: d.Version, PackageDownloadLocation: "NOASSERTION",
			PackageChecksums:          []common.Checksum{{Algorithm: common.SHA256, Value: d.SHA256}},
			PackageExternalReferences: purl(fmt.Sprintf("pkg:deb/debian/%s@%s?arch=%s", d.Name, d.Version, d.Arch)),
			PackageComment:            "image base layer (images/base/packages.lock)",
		})
		describes(doc, "DOCUMENT", id, "DESCRIBES")
	}
	return doc, nil
}

// ParseLock reads images/base/packages.lock.
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

package patchmeta

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
)

// Release is what the release notes say about the release as a whole.
type Release struct {
	Version, Upstream, GoToolchain, SeriesCommit string
}

var categoryTitles = map[string]string{
	"backport": "Fixes backported from upstream",
	"security": "Security fixes",
	"fork":     "Changes of this fork",
	"build":    "Build fixes (no change in behaviour)",
}

// WriteNotes writes RELEASE_NOTES.md for the series (patches in series order).
func WriteNotes(w io.Writer, r Release, series []*Patch) error {
	var b strings.Builder
	fmt.Fprintf(&b, `# %s

kube-apiserver, kube-controller-manager and kube-scheduler %s with the patches below, built
with %s from the hash-verified upstream module sources. They replace upstream's images in a
kubeadm %s control plane, kube-apiserver first on each master; kube-controller-manager and
kube-scheduler also work beside a stock kube-apiserver. Series commit:
`+"`%s`"+`. Every fix upstream shipped in 1.17 after
%s, and whether this release carries it: `+"`patches/UPSTREAM.md`"+`.

`, r.Version, r.Upstream, r.GoToolchain, r.Upstream, r.SeriesCommit, r.Upstream)

	// Every CVE the series fixes, for scanners and security reviews; patches/SECURITY.md says
	// what was considered and not patched.
	if cves := seriesCVEs(series); len(cves) > 0 {
		fmt.Fprintf(&b, "CVEs fixed (%d): %s. CVEs considered and not patched, with the reasons: `patches/SECURITY.md`.\n\n",
			len(cves), strings.Join(cves, ", "))
	}
	for _, category := range Categories {
		printed := false
		for _, p := range series {
			if p.Value("Category") != category {
				continue
			}
			if !printed {
				fmt.Fprintf(&b, "## %s\n\n", categoryTitles[category])
				printed = true
			}
			fmt.Fprintf(&b, "### %s\n\n", p.Subject)
			fmt.Fprintf(&b, "- Why: %s\n", p.Value("Reason"))
			if cves := p.Values("CVE"); len(cves) > 0 {
				fmt.Fprintf(&b, "- CVEs: %s\n", strings.Join(cves, ", "))
			}
			fmt.Fprintf(&b, "- Upstream: %s, first released in %s\n", strings.Join(p.Values("Upstream-PR"), ", "), p.Value("Upstream-Release"))
			fmt.Fprintf(&b, "- Can be dropped from: %s\n", p.Value("Drop-When"))
			fmt.Fprintf(&b, "- Verified by: %s\n", strings.Join(p.Values("Verified-By"), "; "))
			if len(p.Ported()) > 0 && p.Author != "" {
				fmt.Fprintf(&b, "- Upstream author: %s\n", p.Author)
			}
			fmt.Fprintf(&b, "- Patch: `patches/%s`\n\n", p.File)
			if category != "build" && p.Body != "" {
				fmt.Fprintf(&b, "%s\n\n", p.Body)
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// seriesCVEs is every CVE of the series once, by year and number.
func seriesCVEs(series []*Patch) []string {
	seen := map[string]bool{}
	var cves []string
	for _, p := range series {
		for _, cve := range p.Values("CVE") {
			if !seen[cve] {
				seen[cve] = true
				cves = append(cves, cve)
			}
		}
	}
	key := func(cve string) (int, int) {
		parts := strings.Split(cve, "-")
		if len(parts) != 3 {
			return 0, 0
		}
		year, _ := strconv.Atoi(parts[1])
		number, _ := strconv.Atoi(parts[2])
		return year, number
	}
	sort.Slice(cves, func(i, j int) bool {
		yi, ni := key(cves[i])
		yj, nj := key(cves[j])
		if yi != yj {
			return yi < yj
		}
		return ni < nj
	})
	return cves
}

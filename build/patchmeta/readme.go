package patchmeta

import (
	"fmt"
	"io"
	"strings"
)

// The README's patch table is generated from the headers, between these markers, by
// hack/refresh-patches.sh; make lint (build/verify-docs.sh) fails when it differs from what the
// series' headers give.
const (
	ReadmeTableStart = "<!-- patches: generated from the patches' headers by hack/refresh-patches.sh; make lint checks it -->"
	ReadmeTableEnd   = "<!-- /patches -->"
)

// WriteReadmeTable writes the README's table of the series' patches, build fixes left out: each
// patch's number, why we carry it (Reason), its upstream PR and first release or "ours", and its
// proof (the Regression-Test and Regression-Unit-Test trailers, else the first Verified-By).
func WriteReadmeTable(w io.Writer, series []*Patch) error {
	var b strings.Builder
	b.WriteString("| patch | why we carry it | upstream | proof |\n|---|---|---|---|\n")
	for _, p := range series {
		if p.Value("Category") == "build" {
			continue
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", p.Number(), cell(p.Value("Reason")), cell(upstreamCell(p)), cell(proofCell(p)))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func upstreamCell(p *Patch) string {
	var prs []string
	for _, pr := range p.Values("Upstream-PR") {
		if pr == "none" {
			continue
		}
		prs = append(prs, "#"+pr[strings.LastIndex(pr, "#")+1:])
	}
	if len(prs) == 0 {
		return "ours"
	}
	if release := p.Value("Upstream-Release"); release != "" && release != "none" {
		return strings.Join(prs, ", ") + " (" + release + ")"
	}
	return strings.Join(prs, ", ")
}

func proofCell(p *Patch) string {
	var proofs []string
	if test := strings.Fields(p.Value("Regression-Test")); len(test) == 2 {
		proofs = append(proofs, fmt.Sprintf("`%s` `%s`", test[0], test[1]))
	}
	for _, unit := range p.Values("Regression-Unit-Test") {
		if test := strings.Fields(unit); len(test) == 2 {
			proofs = append(proofs, fmt.Sprintf("unit test `%s`", test[1]))
		}
	}
	if len(proofs) == 0 {
		if verified := p.Values("Verified-By"); len(verified) > 0 {
			proofs = append(proofs, verified[0])
		}
	}
	return strings.Join(proofs, "; ")
}

// cell keeps a table cell on one line and its pipes literal.
func cell(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "\n", " "), "|", `\|`)
}

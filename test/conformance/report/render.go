package report

import (
	_ "embed"
	"fmt"
	"os"
	"strings"
	"text/template"
)

//go:embed page.md.tmpl
var pageTemplate string

//go:embed summary.txt.tmpl
var summaryTemplate string

// Image is one image the runs used, by digest.
type Image struct{ Name, Digest string }

// Meta is what the page and the summary say about the runs.
type Meta struct {
	Date, Machine, Command string
	// Release is the release whose images ours ran (its version), Commit the series' commit;
	// StockCommit is the commit the stock images were rebuilt from (the series' tag stock).
	Release, Commit, StockCommit string
	// Minutes is how long the whole invocation took, both runs.
	Minutes                float64
	StockImages, OurImages []Image
	// Subset is the focus that narrowed the runs to some of the conformance tests, or "" for
	// all of them: a subset's page says so first.
	Subset string
	// Nodes are the cluster's nodes, the control plane's first.
	Nodes []string
}

type rendered struct {
	Meta
	Comparison
	Exclusions []Exclusion
	Deviations []Deviation
}

var funcs = template.FuncMap{
	"seconds": func(s float64) string {
		if s == 0 {
			return "-"
		}
		return fmt.Sprintf("%.1f s", s)
	},
	"minutes": func(s float64) string { return fmt.Sprintf("%.0f min", s/60) },
	"cell":    func(s string) string { return strings.ReplaceAll(s, "|", `\|`) },
	"add":     func(a, b int) int { return a + b },
	"join":    func(s []string) string { return strings.Join(s, ", ") },
}

// WritePage writes docs/conformance.md.
func WritePage(path string, meta Meta, c Comparison) error { return write(path, pageTemplate, meta, c) }

// WriteSummary writes the release's conformance.txt.
func WriteSummary(path string, meta Meta, c Comparison) error {
	return write(path, summaryTemplate, meta, c)
}

func write(path, text string, meta Meta, c Comparison) error {
	tmpl, err := template.New(path).Funcs(funcs).Parse(text)
	if err != nil {
		return err
	}
	var out strings.Builder
	if err := tmpl.Execute(&out, rendered{Meta: meta, Comparison: c, Exclusions: Exclusions, Deviations: Deviations}); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(out.String()), 0o644)
}

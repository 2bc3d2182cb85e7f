package report

import (
	_ "embed"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"text/template"

	"github.com/idc-lts/kube-1.17/test/bench"
)

//go:embed page.md.tmpl
var pageTemplate string

// Row is one run as the page's table shows it.
type Row struct {
	bench.Result
	// StockBound is N/qps: how long a build that rewrites every Endpoints needs for one resync.
	StockBound float64
	// RSSvsStock is this run's peak RSS relative to the stock run of the same N and qps.
	RSSvsStock    float64
	EndpointsPuts float64
}

// Target is one of the targets the patched build has to meet, and whether it did.
type Target struct {
	What, Measured string
	Met            bool
}

// APIServerLoad is what a run's Endpoints writes cost the apiserver, for the client rate limit section.
type APIServerLoad struct {
	Row
	PutsPerSecond, APIServerCores, CPUMillisPerPut float64
}

type page struct {
	Env      bench.Environment
	Command  string
	Chart    string
	Rows     []Row
	Headline string
	Targets  []Target
	// Loads are the stock runs, which write Endpoints as fast as their limit allows.
	Loads []APIServerLoad
	// Binaries lists "variant: sha256" of the binaries the runs measured.
	Binaries []string
	// MaxCPUMillisPerPut is the highest apiserver CPU cost of an Endpoints PUT among Loads.
	MaxCPUMillisPerPut float64
}

// WritePage writes the Markdown page; chart is linked relative to it.
func WritePage(path, chart, command string, env bench.Environment, results []bench.Result) error {
	rel, err := filepath.Rel(filepath.Dir(path), chart)
	if err != nil {
		return err
	}
	data := page{Env: env, Command: command, Chart: filepath.ToSlash(rel)}
	stock := map[[2]int]bench.Result{}
	for _, r := range results {
		if r.Variant == "stock" {
			stock[[2]int{r.Services, r.QPS}] = r
		}
	}
	seen := map[string]bool{}
	for _, r := range results {
		if b := fmt.Sprintf("%s `%.12s`", r.Variant, r.BinarySHA256); r.BinarySHA256 != "" && !seen[b] {
			seen[b] = true
			data.Binaries = append(data.Binaries, b)
		}
	}
	for _, r := range results {
		row := Row{Result: r, StockBound: float64(r.Services) / float64(r.QPS), RSSvsStock: math.NaN()}
		if s, ok := stock[[2]int{r.Services, r.QPS}]; ok {
			row.RSSvsStock = float64(r.PeakRSSBytes)/float64(s.PeakRSSBytes) - 1
		}
		row.EndpointsPuts = r.APIServerRequests["PUT endpoints"]
		data.Rows = append(data.Rows, row)
		if r.Variant == "stock" {
			if row.EndpointsPuts > 0 && r.WindowSeconds > 0 {
				load := APIServerLoad{Row: row,
					PutsPerSecond:   row.EndpointsPuts / r.WindowSeconds,
					APIServerCores:  r.APIServerCPUSeconds / r.WindowSeconds,
					CPUMillisPerPut: 1000 * r.APIServerCPUSeconds / row.EndpointsPuts,
				}
				data.Loads = append(data.Loads, load)
				data.MaxCPUMillisPerPut = math.Max(data.MaxCPUMillisPerPut, load.CPUMillisPerPut)
			}
			continue
		}
		data.Targets = append(data.Targets, Target{
			What:     fmt.Sprintf("%s, N=%d qps=%d: no Endpoints written by the resync", r.Variant, r.Services, r.QPS),
			Measured: fmt.Sprintf("%d writes", r.ResyncWrites),
			Met:      r.ResyncWrites == 0,
		})
		if !math.IsNaN(row.RSSvsStock) {
			data.Targets = append(data.Targets, Target{
				What:     fmt.Sprintf("%s, N=%d qps=%d: peak RSS at most 5%% above stock", r.Variant, r.Services, r.QPS),
				Measured: fmt.Sprintf("%+.1f%%", 100*row.RSSvsStock),
				Met:      row.RSSvsStock <= 0.05,
			})
		}
		if r.Services >= 13000 && r.QPS == 20 {
			data.Targets = append(data.Targets, Target{
				What:     fmt.Sprintf("%s, N=%d qps=%d: deletion p99 under 1 s", r.Variant, r.Services, r.QPS),
				Measured: seconds(r.P99),
				Met:      r.P99 < 1,
			})
			if s, ok := stock[[2]int{r.Services, r.QPS}]; ok {
				data.Headline = fmt.Sprintf("At %d headless Services and the default `--kube-api-qps=20`, a pod deleted during a resync "+
					"left its Endpoints after %s (p99; max %s) on stock v1.17.3 and after %s (p99; max %s) on ours: **%.0fx faster at p99**, "+
					"and the resync wrote %d Endpoints instead of %d.",
					r.Services, seconds(s.P99), seconds(s.Max), seconds(r.P99), seconds(r.Max), s.P99/r.P99, r.ResyncWrites, s.ResyncWrites)
			}
		}
	}
	tmpl, err := template.New("page").Funcs(template.FuncMap{
		"seconds": seconds,
		"mb":      func(b int64) string { return fmt.Sprintf("%.0f", float64(b)/1e6) },
		"percent": func(f float64) string {
			if math.IsNaN(f) {
				return "-"
			}
			return fmt.Sprintf("%+.1f%%", 100*f)
		},
		"f0":  func(f float64) string { return fmt.Sprintf("%.0f", f) },
		"f1":  func(f float64) string { return fmt.Sprintf("%.1f", f) },
		"f2":  func(f float64) string { return fmt.Sprintf("%.2f", f) },
		"mul": func(a, b float64) float64 { return a * b },
		"div": func(a, b float64) float64 { return a / b },
		"percent0": func(f float64) string {
			return fmt.Sprintf("%.0f%%", 100*f)
		},
		"check": func(ok bool) string { return map[bool]string{true: "met", false: "**missed**"}[ok] },
	}).Parse(pageTemplate)
	if err != nil {
		return err
	}
	var out strings.Builder
	if err := tmpl.Execute(&out, data); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(out.String()), 0o644)
}

// seconds prints a latency with a precision that suits it.
func seconds(s float64) string {
	switch {
	case s < 1:
		return fmt.Sprintf("%.0f ms", s*1000)
	case s < 100:
		return fmt.Sprintf("%.1f s", s)
	default:
		return fmt.Sprintf("%.0f s", s)
	}
}

package report

import (
	_ "embed"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/template"
	"time"

	"github.com/idc-lts/kube-1.17/test/bench"
	"github.com/idc-lts/kube-1.17/test/bench/summary"
)

//go:embed page.md.tmpl
var pageTemplate string

// Row is one run as the page's tables show it.
type Row struct {
	bench.Result
	// StockBound is N/qps: how long a build that rewrites every Endpoints needs for one resync.
	StockBound float64
	// RSSvsStock is this run's peak RSS relative to the stock run of the same configuration: one
	// sample of each, for information. StartsRSSvsStock compares the medians of their memory
	// starts (Config.Starts), which the target is about.
	RSSvsStock       float64
	StartsRSSvsStock float64
	// StockMedianStartPeakRSSBytes is the stock twin's median, when both runs made memory starts.
	StockMedianStartPeakRSSBytes int64
	EndpointsPuts                float64
	// APIServerCores is the apiserver's average CPU use over the resync's measured window.
	APIServerCores float64
}

// Target is one of the targets the patched build has to meet, and whether it did.
type Target struct {
	What, Measured string
	Met            bool
}

// APIServerLoad is what a run's Endpoints writes cost the apiserver, for the client rate limit section.
type APIServerLoad struct {
	Row
	PutsPerSecond, CPUMillisPerPut float64
}

// Binary is one measured binary and its sha256.
type Binary struct{ Name, SHA256 string }

type page struct {
	Env     bench.Environment
	Command string
	// Defaults are make bench's default settings, as the code has them.
	Defaults defaults
	// Charts are the charts written, by case ("Resync", "Failover", "FanOut"), relative to the page.
	Charts   map[string]string
	Binaries []Binary
	// Headlines are the user-facing figure of each case measured, resync first: computed from
	// the page's own tables (test/bench/summary), so they cannot say what the tables do not.
	Headlines []string
	Rows      []Row
	Failovers []Row
	// Schedulers are kube-scheduler's planned handovers, by build.
	Schedulers []bench.SchedulerHandover
	// Memory are the runs that made memory starts (Config.Starts).
	Memory []Row
	// MemoryHold is how long a memory start runs once it has queued every Service.
	MemoryHold time.Duration
	FanOuts    []Row
	Targets    []Target
	// StockResyncs are the stock runs without watchers, which write Endpoints as fast as their
	// limit allows; Loads are what their writes cost the apiserver.
	StockResyncs []Row
	Loads        []APIServerLoad
	// MaxCPUMillisPerPut is the highest apiserver CPU cost of an Endpoints PUT among Loads.
	MaxCPUMillisPerPut float64
	// ReproducedAt says at how many watchers stock's probe first saw requests failing or slow.
	ReproducedAt string
	// Scaling are the runs without watchers when they cover two sizes or more; StockNotRun says
	// at which of those sizes stock was not run, and what it would have needed.
	Scaling     []Row
	StockNotRun []string
}

// CurveSizes and CurveLargest are what the scaling curve needs: ours measured at three sizes or
// more, the largest at least 30,000 Services (the largest cluster our users asked about).
const (
	CurveSizes   = 3
	CurveLargest = 30000
)

type defaults struct{ Services, Runs, Variants, Deletions string }

// WritePage writes the Markdown page; charts maps a case to its chart's path, for the cases
// that have one.
func WritePage(path string, charts map[string]string, command string, env bench.Environment, results []bench.Result,
	schedulers []bench.SchedulerHandover) error {
	data := page{Env: env, Command: command, Charts: map[string]string{}, MemoryHold: bench.MemoryHold, Schedulers: schedulers,
		Defaults: defaults{Services: bench.DefaultServices, Runs: bench.DefaultRuns, Variants: bench.DefaultVariants, Deletions: bench.DefaultDeletions}}
	for name, chart := range charts {
		rel, err := filepath.Rel(filepath.Dir(path), chart)
		if err != nil {
			return err
		}
		data.Charts[name] = filepath.ToSlash(rel)
	}
	data.Binaries = binaries(env, results)
	for _, s := range schedulers {
		data.Binaries = append(data.Binaries, Binary{Name: s.Variant + " kube-scheduler", SHA256: s.BinarySHA256})
	}
	stock := map[string]bench.Result{}
	for _, r := range results {
		if r.Variant == "stock" {
			stock[configKey(r)] = r
		}
	}
	var mostWatched *bench.Result
	for _, r := range results {
		row := Row{Result: r, StockBound: float64(r.Services) / float64(r.QPS), RSSvsStock: math.NaN(), StartsRSSvsStock: math.NaN(),
			EndpointsPuts: r.APIServerRequests["PUT endpoints"]}
		if r.WindowSeconds > 0 {
			row.APIServerCores = r.APIServerCPUSeconds / r.WindowSeconds
		}
		s, paired := stock[configKey(r)]
		if paired {
			row.RSSvsStock = float64(r.PeakRSSBytes)/float64(s.PeakRSSBytes) - 1
			if r.MedianStartPeakRSSBytes > 0 && s.MedianStartPeakRSSBytes > 0 {
				row.StartsRSSvsStock = float64(r.MedianStartPeakRSSBytes)/float64(s.MedianStartPeakRSSBytes) - 1
				row.StockMedianStartPeakRSSBytes = s.MedianStartPeakRSSBytes
			}
		}
		data.Rows = append(data.Rows, row)
		if r.Failover != nil {
			data.Failovers = append(data.Failovers, row)
		}
		if r.FanOut != nil {
			data.FanOuts = append(data.FanOuts, row)
		}
		if len(r.StartPeakRSSBytes) > 0 {
			data.Memory = append(data.Memory, row)
		}
		if r.Variant == "stock" {
			if r.FanOut != nil {
				if mostWatched == nil || r.Watchers > mostWatched.Watchers {
					run := r
					mostWatched = &run
				}
				continue
			}
			data.StockResyncs = append(data.StockResyncs, row)
			if row.EndpointsPuts > 0 && r.WindowSeconds > 0 {
				load := APIServerLoad{Row: row, PutsPerSecond: row.EndpointsPuts / r.WindowSeconds,
					CPUMillisPerPut: 1000 * r.APIServerCPUSeconds / row.EndpointsPuts}
				data.Loads = append(data.Loads, load)
				data.MaxCPUMillisPerPut = math.Max(data.MaxCPUMillisPerPut, load.CPUMillisPerPut)
			}
			continue
		}
		data.Targets = append(data.Targets, targets(row)...)
	}
	if r := mostWatched; r != nil {
		// Fewer watchers may well not hurt on a given machine: the page says which did not.
		data.Targets = append(data.Targets, Target{
			What:     fmt.Sprintf("%s: the incident reproduced, probe requests failing or over %v", r.Config, bench.SlowRequest),
			Measured: probeOutcome(r.FanOut.Probe),
			Met:      r.FanOut.Probe.ErrorCount()+r.FanOut.Probe.Slow > 0,
		})
	}
	for _, s := range schedulers {
		if s.Variant == "stock" {
			continue
		}
		data.Targets = append(data.Targets, Target{
			What: fmt.Sprintf("%s kube-scheduler: planned handover, the standby leads at most %s after SIGTERM (the slowest of %d)",
				s.Variant, seconds(HandoverTakeover), len(s.TakeoverSeconds)),
			Measured: seconds(s.Max),
			Met:      s.Max <= HandoverTakeover,
		})
	}
	data.Scaling, data.StockNotRun = scaling(data.Rows)
	data.Targets = append(data.Targets, curveTarget(results))
	data.ReproducedAt = reproducedAt(data.FanOuts)
	tmpl, err := template.New("page").Funcs(template.FuncMap{
		"seconds": seconds,
		"mb":      megabytes,
		"mbs": func(samples []int64) string {
			var list []string
			for _, b := range samples {
				list = append(list, megabytes(b))
			}
			return strings.Join(list, ", ")
		},
		"percent": func(f float64) string {
			if math.IsNaN(f) {
				return "-"
			}
			return fmt.Sprintf("%+.1f%%", 100*f)
		},
		"f0":       func(f float64) string { return fmt.Sprintf("%.0f", f) },
		"f1":       func(f float64) string { return fmt.Sprintf("%.1f", f) },
		"f2":       func(f float64) string { return fmt.Sprintf("%.2f", f) },
		"mul":      func(a, b float64) float64 { return a * b },
		"div":      func(a, b float64) float64 { return a / b },
		"add":      func(a, b float64) float64 { return a + b },
		"percent0": func(f float64) string { return fmt.Sprintf("%.0f%%", 100*f) },
		"secondsList": func(list []float64) string {
			var out []string
			for _, s := range list {
				out = append(out, seconds(s))
			}
			return strings.Join(out, ", ")
		},
		"errors": func(p bench.ProbeResult) string { return errorSummary(p) },
		"check":  func(ok bool) string { return map[bool]string{true: "met", false: "**missed**"}[ok] },
	}).Parse(pageTemplate)
	if err != nil {
		return err
	}
	render := func() (string, error) {
		var out strings.Builder
		err := tmpl.Execute(&out, data)
		return out.String(), err
	}
	// The summary is read from the tables as rendered: the page renders once without it.
	text, err := render()
	if err != nil {
		return err
	}
	lines, err := summary.FromTables(summary.Tables(text))
	if err != nil {
		return fmt.Errorf("the page's summary: %v", err)
	}
	// A case without a stock and an ours run (make bench narrowed) has no line.
	for _, line := range lines {
		if line.Missing == "" {
			data.Headlines = append(data.Headlines, strings.TrimPrefix(line.Text, "- "))
		}
	}
	if text, err = render(); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(text), 0o644)
}

// megabytes is a byte count in MB, rounded.
func megabytes(b int64) string { return fmt.Sprintf("%.0f", float64(b)/1e6) }

// configKey identifies a run's configuration whatever its build.
func configKey(r bench.Result) string {
	c := r.Config
	c.Variant = ""
	return c.String()
}

// binaries lists the sha256 of every binary measured: each build's kube-controller-manager, then
// the stock control plane.
func binaries(env bench.Environment, results []bench.Result) []Binary {
	var list []Binary
	seen := map[string]bool{}
	for _, r := range results {
		name := r.Variant + " kube-controller-manager"
		if r.BinarySHA256 != "" && !seen[name] {
			seen[name] = true
			list = append(list, Binary{Name: name, SHA256: r.BinarySHA256})
		}
	}
	var names []string
	for name := range env.ControlPlaneSHA256 {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		list = append(list, Binary{Name: "stock " + name, SHA256: env.ControlPlaneSHA256[name]})
	}
	return list
}

// targets are what a run of our build has to meet.
func targets(row Row) []Target {
	r := row.Result
	list := []Target{{
		What:     fmt.Sprintf("%s: no Endpoints written by the resync", r.Config),
		Measured: fmt.Sprintf("%d writes", r.ResyncWrites),
		Met:      r.ResyncWrites == 0,
	}}
	if !math.IsNaN(row.StartsRSSvsStock) {
		list = append(list, Target{
			What: fmt.Sprintf("%s: peak RSS, the median of %d starts, at most 5%% above stock's", r.Config, len(r.StartPeakRSSBytes)),
			Measured: fmt.Sprintf("%+.1f%% (%s MB against %s MB)", 100*row.StartsRSSvsStock,
				megabytes(r.MedianStartPeakRSSBytes), megabytes(row.StockMedianStartPeakRSSBytes)),
			Met: row.StartsRSSvsStock <= 0.05,
		})
	}
	if r.Services == ResyncDeletionServices && r.QPS == 20 && r.Watchers == 0 {
		list = append(list, Target{
			What:     fmt.Sprintf("%s: resync deletion p99 at most %s", r.Config, seconds(ResyncDeletionP99)),
			Measured: seconds(r.P99),
			Met:      r.P99 <= ResyncDeletionP99,
		})
	}
	if f := r.Failover; f != nil && r.Handover {
		list = append(list, Target{
			What:     fmt.Sprintf("%s: planned handover of kube-controller-manager, the standby leads at most %s after SIGTERM", r.Config, seconds(HandoverTakeover)),
			Measured: seconds(f.TakeoverSeconds),
			Met:      f.TakeoverSeconds <= HandoverTakeover,
		})
	}
	if f := r.Failover; f != nil {
		list = append(list, Target{
			What:     fmt.Sprintf("%s: no Endpoints written by the new leader's startup sync", r.Config),
			Measured: fmt.Sprintf("%d writes", f.StartupWrites),
			Met:      f.StartupWrites == 0,
		}, Target{
			What:     fmt.Sprintf("%s: failover deletion p99 within takeover + 1 s", r.Config),
			Measured: fmt.Sprintf("%s = takeover %s + %s", seconds(f.P99), seconds(f.TakeoverSeconds), seconds(f.P99-f.TakeoverSeconds)),
			Met:      f.P99 <= f.TakeoverSeconds+1,
		})
	}
	if f := r.FanOut; f != nil {
		list = append(list, Target{
			What:     fmt.Sprintf("%s: no probe request failing or over %v", r.Config, bench.SlowRequest),
			Measured: probeOutcome(f.Probe),
			Met:      f.Probe.ErrorCount()+f.Probe.Slow == 0,
		})
	}
	return list
}

// ResyncDeletionP99 and HandoverTakeover are targets in seconds: a pod deletion during a full
// resync at 13,000 Services reaches its Endpoints as an idle one nearly does, and a planned stop
// costs the retry period plus a margin.
const (
	ResyncDeletionP99 = 0.1
	HandoverTakeover  = 3
)

// ResyncDeletionServices is the size the resync deletion target is set at: the incident's. The
// curve shows the other sizes.
const ResyncDeletionServices = 13000

// curveTarget says whether the runs of our build draw the scaling curve.
func curveTarget(results []bench.Result) Target {
	var ours []bench.Result
	for _, r := range results {
		if r.Variant != "stock" {
			ours = append(ours, r)
		}
	}
	n := sizes(ours)
	largest := 0
	if len(n) > 0 {
		largest = n[len(n)-1]
	}
	return Target{
		What:     fmt.Sprintf("scaling curve: ours measured at %d sizes or more, up to at least %d Services", CurveSizes, CurveLargest),
		Measured: fmt.Sprintf("%d sizes %v", len(n), n),
		Met:      len(n) >= CurveSizes && largest >= CurveLargest,
	}
}

// reproducedAt names the fewest watchers under which a stock run's probe saw a request fail or
// take over bench.SlowRequest, and the most under which none did.
func reproducedAt(fanOuts []Row) string {
	reproduced, quiet := 0, 0
	for _, r := range fanOuts {
		if r.Variant != "stock" {
			continue
		}
		w := r.FanOut.Watchers
		if r.FanOut.Probe.ErrorCount()+r.FanOut.Probe.Slow > 0 {
			if reproduced == 0 || w < reproduced {
				reproduced = w
			}
		} else if w > quiet {
			quiet = w
		}
	}
	switch {
	case reproduced == 0:
		return fmt.Sprintf("no stock run here had a probe request fail or take over %v", bench.SlowRequest)
	case quiet == 0:
		return fmt.Sprintf("stock's probe requests failed or took over %v with %d watchers, the fewest measured", bench.SlowRequest, reproduced)
	default:
		return fmt.Sprintf("on this machine %d watchers were not enough for a stock probe request to fail or take over %v; %d were",
			quiet, bench.SlowRequest, reproduced)
	}
}

func probeOutcome(p bench.ProbeResult) string {
	return fmt.Sprintf("%d failed, %d over %v, max %s", p.ErrorCount(), p.Slow, bench.SlowRequest, seconds(p.Max))
}

// errorSummary lists a probe's failures by cause, most frequent first.
func errorSummary(p bench.ProbeResult) string {
	if len(p.Errors) == 0 {
		return "none"
	}
	var causes []string
	for cause := range p.Errors {
		causes = append(causes, cause)
	}
	sort.Slice(causes, func(i, j int) bool { return p.Errors[causes[i]] > p.Errors[causes[j]] })
	for i, cause := range causes {
		causes[i] = fmt.Sprintf("%d x %s", p.Errors[cause], cause)
	}
	return strings.Join(causes, ", ")
}

// seconds prints a latency with a precision that suits it.
func seconds(s float64) string {
	switch {
	case math.IsNaN(s):
		return "-"
	case s < 1:
		return fmt.Sprintf("%.0f ms", s*1000)
	case s < 100:
		return fmt.Sprintf("%.1f s", s)
	default:
		return fmt.Sprintf("%.0f s", s)
	}
}

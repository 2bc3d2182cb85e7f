package report

import (
	"fmt"
	"sort"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/idc-lts/kube-1.17/test/bench"
)

// Curve is one of the scaling charts: a figure of each run without watchers against its number
// of Services, one line per build and run.
type Curve struct {
	// File is the PNG's name, next to the page.
	File  string
	Title string
	// Unit labels the y axis.
	Unit string
	// Log draws the y axis on a log scale.
	Log bool
	// Value picks what a run contributes; ok is false when it has nothing for this chart.
	Value func(bench.Result) (v float64, ok bool)
	// Failover, if set, draws a second line per run from its failover, where it has one.
	Failover func(*bench.FailoverResult) float64
}

// Curves are the scaling charts, by the name the page's template knows them by.
var Curves = map[string]Curve{
	"ScalingLatency": {File: "benchmarks-scaling-latency.png", Title: "Deletion p99 against the number of Services (resync, and failover where measured)",
		Unit: "p99 (seconds, log scale)", Log: true,
		Value:    func(r bench.Result) (float64, bool) { return r.P99, r.Watchers == 0 },
		Failover: func(f *bench.FailoverResult) float64 { return f.P99 }},
	"ScalingMemory": {File: "benchmarks-scaling-memory.png", Title: "Peak RSS of the measured kube-controller-manager against the number of Services",
		Unit:  "peak RSS (MB)",
		Value: func(r bench.Result) (float64, bool) { return float64(r.PeakRSSBytes) / 1e6, r.Watchers == 0 }},
}

// curveKey names a line of a scaling chart: the run without its size.
func curveKey(r bench.Result) string {
	c := r.Config
	c.Services = 0
	return fmt.Sprintf("%s qps=%d/%d%s", c.Variant, c.QPS, c.Burst, c.Extras())
}

// sizes returns the distinct numbers of Services among runs without watchers.
func sizes(results []bench.Result) []int {
	seen := map[int]bool{}
	var list []int
	for _, r := range results {
		if r.Watchers == 0 && !seen[r.Services] {
			seen[r.Services] = true
			list = append(list, r.Services)
		}
	}
	sort.Ints(list)
	return list
}

// Write draws the curve; it reports false when the runs have fewer than two sizes.
func (c Curve) Write(path string, results []bench.Result) (bool, error) {
	if len(sizes(results)) < 2 {
		return false, nil
	}
	lines := map[string]plotter.XYs{}
	var keys []string
	stock := map[string]bool{}
	for _, r := range results {
		v, ok := c.Value(r)
		if !ok {
			continue
		}
		key := curveKey(r)
		if _, seen := lines[key]; !seen {
			keys = append(keys, key)
		}
		lines[key] = append(lines[key], plotter.XY{X: float64(r.Services), Y: v})
		stock[key] = r.Variant == "stock"
		if r.Failover != nil && c.Failover != nil {
			fkey := key + " failover"
			if _, seen := lines[fkey]; !seen {
				keys = append(keys, fkey)
			}
			lines[fkey] = append(lines[fkey], plotter.XY{X: float64(r.Services), Y: c.Failover(r.Failover)})
			stock[fkey] = stock[key]
		}
	}
	p := plot.New()
	p.Title.Text = c.Title
	p.X.Label.Text = "headless Services"
	p.Y.Label.Text = c.Unit
	if c.Log {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	} else {
		p.Y.Min = 0
	}
	p.X.Min = 0
	p.Legend.Top = true
	p.Legend.Left = true
	p.Add(plotter.NewGrid())
	for i, key := range keys {
		points := lines[key]
		sort.Slice(points, func(a, b int) bool { return points[a].X < points[b].X })
		for j := range points {
			if c.Log && points[j].Y < floor {
				points[j].Y = floor
			}
		}
		line, scatter, err := plotter.NewLinePoints(points)
		if err != nil {
			return false, fmt.Errorf("%s: %v", key, err)
		}
		colour := palette[i%len(palette)]
		line.Color, scatter.Color = colour, colour
		line.Width = vg.Points(1.5)
		if !stock[key] {
			line.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
		}
		p.Add(line, scatter)
		p.Legend.Add(key, line, scatter)
	}
	p.Legend.ThumbnailWidth = vg.Points(25)
	p.Legend.TextStyle.Font.Size = vg.Points(9)
	return true, p.Save(9*vg.Inch, 5.5*vg.Inch, path)
}

// scaling lists the runs without watchers by build, run and size, when they cover two sizes or
// more, and says which sizes stock was not run at and what it would have needed there.
func scaling(rows []Row) (list []Row, stockNotRun []string) {
	var results []bench.Result
	for _, r := range rows {
		results = append(results, r.Result)
	}
	if len(sizes(results)) < 2 {
		return nil, nil
	}
	stockAt := map[string]bool{}
	for _, r := range rows {
		if r.Watchers == 0 {
			list = append(list, r)
			if r.Variant == "stock" {
				stockAt[configKey(r.Result)] = true
			}
		}
	}
	sort.SliceStable(list, func(i, j int) bool {
		a, b := list[i], list[j]
		if ka, kb := curveKey(a.Result), curveKey(b.Result); ka != kb {
			return variantOrder(a.Variant)+ka < variantOrder(b.Variant)+kb
		}
		return a.Services < b.Services
	})
	for _, r := range list {
		if r.Variant == "stock" {
			continue
		}
		// configKey leaves the build out: the same key names the stock run of this configuration.
		if !stockAt[configKey(r.Result)] {
			extra := ""
			if r.Failover != nil {
				extra = ", and its failover's startup pass as long again"
			}
			stockNotRun = append(stockNotRun, fmt.Sprintf("stock was not run at N=%d qps=%d/%d%s: its resync alone needs N/qps = %.0f s%s",
				r.Services, r.QPS, r.Burst, r.Extras(), r.StockBound, extra))
		}
	}
	return list, stockNotRun
}

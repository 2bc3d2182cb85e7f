package report

import (
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/idc-lts/kube-1.17/test/bench"
)

// palette gives each configuration a colour; stock is drawn solid, other builds dashed.
var palette = []color.Color{
	color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
	color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
	color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff},
	color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff},
	color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff},
	color.RGBA{R: 0x8c, G: 0x56, B: 0x4b, A: 0xff},
}

// floor keeps sub-millisecond latencies on the logarithmic axis.
const floor = 1e-3

// Chart is one of the page's charts: a latency distribution per run.
type Chart struct {
	// File is the PNG's name, next to the page.
	File  string
	Title string
	// Of is what the latencies are of, for the y axis: "deletions", "requests".
	Of string
	// Latencies picks what a run contributes, nil when it has nothing for this chart.
	Latencies func(bench.Result) []float64
}

// Charts are the page's charts, one per case, by the name the page's template knows them by.
var Charts = map[string]Chart{
	"Resync": {File: "benchmarks-resync.png", Title: "Pod deleted -> address gone from Endpoints, during a full resync", Of: "deletions",
		Latencies: func(r bench.Result) []float64 { return r.DeletionLatencies }},
	"Failover": {File: "benchmarks-failover.png", Title: "Pod deleted -> address gone from Endpoints, deletions from the leader's SIGKILL on", Of: "deletions",
		Latencies: func(r bench.Result) []float64 {
			if r.Failover == nil {
				return nil
			}
			return r.Failover.DeletionLatencies
		}},
	"FanOut": {File: "benchmarks-fanout.png", Title: "An ordinary client's GET/LIST latency during a resync under Endpoints watchers", Of: "requests",
		Latencies: func(r bench.Result) []float64 {
			if r.FanOut == nil {
				return nil
			}
			return r.FanOut.Probe.Latencies
		}},
}

// Write draws each run's latencies as a cumulative distribution on a log axis; it reports false
// when no run has any.
func (c Chart) Write(path string, results []bench.Result) (bool, error) {
	p := plot.New()
	p.Title.Text = c.Title
	p.X.Label.Text = "latency (seconds, log scale)"
	p.Y.Label.Text = "fraction of " + c.Of
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	p.Y.Min, p.Y.Max = 0, 1
	p.Legend.Top = true
	p.Legend.Left = true
	p.Legend.XOffs = 0.2 * vg.Inch
	p.Legend.YOffs = -0.3 * vg.Inch
	p.Add(plotter.NewGrid())

	colours := map[string]color.Color{}
	drawn := 0
	for _, r := range results {
		latencies := c.Latencies(r)
		if len(latencies) == 0 {
			continue
		}
		config := configKey(r)
		if _, ok := colours[config]; !ok {
			colours[config] = palette[len(colours)%len(palette)]
		}
		points := make(plotter.XYs, len(latencies))
		for i, latency := range latencies {
			points[i].X = math.Max(latency, floor)
			points[i].Y = float64(i+1) / float64(len(latencies))
		}
		line, err := plotter.NewLine(points)
		if err != nil {
			return false, fmt.Errorf("%v: %v", r.Config, err)
		}
		line.Color = colours[config]
		line.Width = vg.Points(1.5)
		if r.Variant != "stock" {
			line.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
		}
		p.Add(line)
		p.Legend.Add(r.Config.String(), line)
		drawn++
	}
	if drawn == 0 {
		return false, nil
	}
	p.Legend.ThumbnailWidth = vg.Points(25)
	p.Legend.TextStyle.Font.Size = vg.Points(9)
	return true, p.Save(9*vg.Inch, 5.5*vg.Inch, path)
}

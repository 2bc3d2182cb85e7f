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

// palette gives each (Services, QPS) pair a colour; stock is drawn solid, other builds dashed.
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

// WriteChart draws each run's deletion latencies as a cumulative distribution on a log axis.
func WriteChart(path string, results []bench.Result) error {
	p := plot.New()
	p.Title.Text = "Pod deleted -> address gone from Endpoints, during a full resync"
	p.X.Label.Text = "latency (seconds, log scale)"
	p.Y.Label.Text = "fraction of deletions"
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	p.Y.Min, p.Y.Max = 0, 1
	// Upper middle: between the patched runs (milliseconds, left) and stock (seconds, right).
	p.Legend.Top = true
	p.Legend.Left = true
	p.Legend.XOffs = 2.3 * vg.Inch
	p.Legend.YOffs = -0.3 * vg.Inch
	p.Add(plotter.NewGrid())

	colours := map[string]color.Color{}
	for _, r := range results {
		pair := fmt.Sprintf("N=%d qps=%d", r.Services, r.QPS)
		if _, ok := colours[pair]; !ok {
			colours[pair] = palette[len(colours)%len(palette)]
		}
		points := make(plotter.XYs, len(r.DeletionLatencies))
		for i, latency := range r.DeletionLatencies {
			points[i].X = math.Max(latency, floor)
			points[i].Y = float64(i+1) / float64(len(r.DeletionLatencies))
		}
		line, err := plotter.NewLine(points)
		if err != nil {
			return fmt.Errorf("%v: %v", r.Config, err)
		}
		line.Color = colours[pair]
		line.Width = vg.Points(1.5)
		if r.Variant != "stock" {
			line.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
		}
		p.Add(line)
		p.Legend.Add(fmt.Sprintf("%s %s", pair, r.Variant), line)
	}
	p.Legend.ThumbnailWidth = vg.Points(25)
	p.Legend.TextStyle.Font.Size = vg.Points(9)
	return p.Save(9*vg.Inch, 5.5*vg.Inch, path)
}

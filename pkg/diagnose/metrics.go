package diagnose

import (
	"fmt"
	"net/http"
	"sort"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// rateLimiterMetric is the client rate limiter's wait, which this fork's components export
// (patch 0007) and stock 1.17 does not.
const rateLimiterMetric = "rest_client_rate_limiter_duration_seconds"

// histogram is a histogram's totals over all its series.
type histogram struct {
	count uint64
	sum   float64
	// upToOneSecond: the observations of at most 1 s (the cumulative bucket le=1).
	upToOneSecond uint64
}

// scrape is one read of a component's /metrics.
type scrape struct {
	rateLimiter *histogram // nil: the component does not export it
	err         error
}

var metricsClient = &http.Client{Timeout: 10 * time.Second}

// scrapeAll reads each component's /metrics once, one at a time.
func scrapeAll(urls map[string]string) map[string]scrape {
	out := map[string]scrape{}
	var components []string
	for c := range urls {
		components = append(components, c)
	}
	sort.Strings(components)
	for _, c := range components {
		out[c] = scrapeOne(urls[c])
	}
	return out
}

func scrapeOne(url string) scrape {
	resp, err := metricsClient.Get(url)
	if err != nil {
		return scrape{err: err}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return scrape{err: fmt.Errorf("GET %s: %s", url, resp.Status)}
	}
	var parser expfmt.TextParser
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return scrape{err: fmt.Errorf("GET %s: %v", url, err)}
	}
	return scrape{rateLimiter: histogramOf(families[rateLimiterMetric])}
}

func histogramOf(f *dto.MetricFamily) *histogram {
	if f == nil {
		return nil
	}
	h := &histogram{}
	for _, m := range f.Metric {
		if m.Histogram != nil {
			h.count += m.Histogram.GetSampleCount()
			h.sum += m.Histogram.GetSampleSum()
			for _, b := range m.Histogram.Bucket {
				if b.GetUpperBound() == 1 {
					h.upToOneSecond += b.GetCumulativeCount()
				}
			}
		}
	}
	return h
}

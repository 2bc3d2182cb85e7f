// Package report renders the benchmark's JSON results as docs/benchmarks.md and a latency chart.
package report

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/idc-lts/kube-1.17/test/bench"
)

// Load reads the environment and every run's result from dir, ordered by Services, QPS and
// build (stock first).
func Load(dir string) ([]bench.Result, bench.Environment, error) {
	var env bench.Environment
	if err := readJSON(filepath.Join(dir, bench.EnvironmentFile), &env); err != nil {
		return nil, env, fmt.Errorf("%v (run 'make bench' first)", err)
	}
	paths, err := filepath.Glob(filepath.Join(dir, "services-*.json"))
	if err != nil {
		return nil, env, err
	}
	if len(paths) == 0 {
		return nil, env, fmt.Errorf("no results (services-*.json) in %s: run 'make bench' first", dir)
	}
	results := make([]bench.Result, len(paths))
	for i, path := range paths {
		if err := readJSON(path, &results[i]); err != nil {
			return nil, env, err
		}
		// Results written before Config.Failover had a JSON name of its own say it by their Failover.
		results[i].Config.Failover = results[i].Config.Failover || results[i].Failover != nil
		if len(results[i].DeletionLatencies) == 0 {
			return nil, env, fmt.Errorf("%s: no deletion latencies", path)
		}
	}
	sort.Slice(results, func(i, j int) bool {
		a, b := results[i], results[j]
		if a.Services != b.Services {
			return a.Services < b.Services
		}
		if a.QPS != b.QPS {
			return a.QPS < b.QPS
		}
		if a.Watchers != b.Watchers {
			return a.Watchers < b.Watchers
		}
		return variantOrder(a.Variant) < variantOrder(b.Variant)
	})
	return results, env, nil
}

// LoadSchedulerHandovers reads the kube-scheduler handovers from dir, stock first; none is not an
// error (make bench narrowed to the resync).
func LoadSchedulerHandovers(dir string) ([]bench.SchedulerHandover, error) {
	paths, err := filepath.Glob(filepath.Join(dir, bench.SchedulerHandoverPrefix+"*.json"))
	if err != nil {
		return nil, err
	}
	handovers := make([]bench.SchedulerHandover, len(paths))
	for i, path := range paths {
		if err := readJSON(path, &handovers[i]); err != nil {
			return nil, err
		}
		if len(handovers[i].TakeoverSeconds) == 0 {
			return nil, fmt.Errorf("%s: no handovers", path)
		}
	}
	sort.Slice(handovers, func(i, j int) bool {
		return variantOrder(handovers[i].Variant) < variantOrder(handovers[j].Variant)
	})
	return handovers, nil
}

func variantOrder(v string) string {
	if v == "stock" {
		return ""
	}
	return v
}

func readJSON(path string, v interface{}) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%s: %v", path, err)
	}
	return nil
}

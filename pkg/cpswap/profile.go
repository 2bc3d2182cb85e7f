package cpswap

import (
	"fmt"
	"sort"
	"strings"
	"unicode"
)

// Flag is a command-line flag of the component.
type Flag struct {
	Name, Value string
	// AtLeast makes Value a floor for a numeric flag: a higher value already in the manifest
	// stays (an operator who raised a limit on purpose keeps it).
	AtLeast bool
}

// Profile is a named set of flags an operator can ask for.
type Profile struct {
	Name  string
	Flags []Flag
	// OnlyFor, if set, is the one component the profile is meant for.
	OnlyFor string
}

// Profiles are the named flag sets cpswap knows, in the order `--help` lists them.
var Profiles = []Profile{
	// The patched build defaults to leases; saying it in the manifest keeps a later rollback of
	// the image from silently changing the lock type back.
	{Name: "leases", Flags: []Flag{{Name: "--leader-elect-resource-lock", Value: "leases"}}},
	// kube-controller-manager's client rate limit: each controller's client may send 50
	// requests a second, bursts of 100. Why these numbers, measured with `make bench`
	// (docs/benchmarks.md, "Client rate limits"):
	//  - With patch 0004 a full resync writes no Endpoints, so the incidents' 100/120 and
	//    300/325, which only shortened the drain of a useless rewrite of every Endpoints, buy
	//    nothing; on this build the default 20/30 already shows no queueing during a resync.
	//  - What is left for the limit to pace is real change in bulk: a rack of nodes failing
	//    turns thousands of pods NotReady, each an Endpoints write that must land before traffic
	//    stops going to dead pods. At 50/s, 2,000 such writes take 40 s instead of 100 s at 20/s.
	//  - Each Endpoints write costs the apiserver CPU (measured: see the page) and is sent to
	//    every Endpoints watcher, kube-proxy on every node included. 50/s bounds that at half of
	//    the incidents' 100/s and a sixth of 300/s, which on 1,000 nodes would be 300,000 watch
	//    events a second.
	//  - Burst 100, twice the rate like kube-scheduler's own default (50/100), absorbs a short
	//    spike without waiting.
	// Both are floors: an operator's higher value stays.
	{
		Name:    "kcm-client-rate",
		Flags:   []Flag{{Name: "--kube-api-qps", Value: "50", AtLeast: true}, {Name: "--kube-api-burst", Value: "100", AtLeast: true}},
		OnlyFor: "kube-controller-manager",
	},
}

// ProfileNames lists the known profiles.
func ProfileNames() []string {
	var names []string
	for _, p := range Profiles {
		names = append(names, p.Name)
	}
	sort.Strings(names)
	return names
}

// LookupProfiles resolves a comma-separated list of profile names.
func LookupProfiles(list string) ([]Profile, error) {
	var out []Profile
	for _, name := range strings.Split(list, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		found := false
		for _, p := range Profiles {
			if p.Name == name {
				out, found = append(out, p), true
			}
		}
		if !found {
			return nil, fmt.Errorf("unknown profile %q (known: %s)", name, strings.Join(ProfileNames(), ", "))
		}
	}
	return out, nil
}

// ParseFlag reads an operator's "--name=value".
func ParseFlag(s string) (Flag, error) {
	name, value, ok := strings.Cut(s, "=")
	if !ok || !strings.HasPrefix(name, "--") || len(name) < 3 || strings.ContainsAny(name, " \t") {
		return Flag{}, fmt.Errorf("--flag wants --name=value, got %q", s)
	}
	if i := strings.IndexFunc(value, unicode.IsControl); i >= 0 {
		return Flag{}, fmt.Errorf("--flag %s: the value holds a control character (%q at byte %d); a flag in the manifest is one line", name, value[i], i)
	}
	return Flag{Name: name, Value: value}, nil
}

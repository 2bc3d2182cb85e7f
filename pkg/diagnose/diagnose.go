// Package diagnose is `cpswap diagnose`: a read-only look at a live 1.17 cluster, bounded in time
// and in requests, that says which of the four incidents behind this fork (../shared/seeds in the
// project's history; README) the cluster shows or is exposed to, and what runs on its masters.
//
// It reads the control plane's static pods (their mirror pods in kube-system) for the flags
// that matter, then watches Endpoints, Services and kube-system Leases for a window, and
// optionally scrapes components' /metrics. Every request it makes is a GET (a transport refuses
// anything else), at most QPS per second.
package diagnose

import (
	"encoding/json"
	"fmt"
	"time"
)

// Severity orders what a finding says about the cluster.
type Severity int

const (
	// OK: nothing to act on.
	OK Severity = iota
	// Exposed: the conditions for the incident are present; the window did not show it.
	Exposed
	// Observed: the window showed the incident happening.
	Observed
)

func (s Severity) String() string {
	switch s {
	case OK:
		return "ok"
	case Exposed:
		return "exposed"
	case Observed:
		return "observed"
	}
	return fmt.Sprintf("Severity(%d)", int(s))
}

// MarshalJSON writes the severity's name.
func (s Severity) MarshalJSON() ([]byte, error) { return json.Marshal(s.String()) }

// UnmarshalJSON reads a severity's name.
func (s *Severity) UnmarshalJSON(data []byte) error {
	var name string
	if err := json.Unmarshal(data, &name); err != nil {
		return err
	}
	for _, known := range []Severity{OK, Exposed, Observed} {
		if known.String() == name {
			*s = known
			return nil
		}
	}
	return fmt.Errorf("unknown severity %q", name)
}

// Exit codes of `cpswap diagnose` besides cpswap's own 0 (nothing found), 1 (could not look:
// the error says why) and 2 (usage). They are above cpswap's change codes (3, 4), which a
// read-only command never returns.
const (
	ExitExposed  = 5
	ExitObserved = 6
)

// ExitCode is the code for a report: its most severe finding.
func (r *Report) ExitCode() int {
	switch r.Worst() {
	case Observed:
		return ExitObserved
	case Exposed:
		return ExitExposed
	}
	return 0
}

// Worst is the most severe finding's severity.
func (r *Report) Worst() Severity {
	worst := OK
	for _, f := range r.Findings {
		if f.Severity > worst {
			worst = f.Severity
		}
	}
	return worst
}

// Finding IDs, one per incident (seed) plus what runs.
const (
	FindingLeaderElection = "leader-election-endpoints"
	FindingResyncRewrites = "resync-rewrites"
	FindingThrottling     = "client-throttling"
	FindingBackInTime     = "back-in-time"
	FindingComponents     = "components"
)

// Finding is one answer: what the check saw, the evidence, what it means and what fixes it.
// Figures carries the numbers for a fleet's tooling, by name.
type Finding struct {
	ID       string             `json:"id"`
	Title    string             `json:"title"`
	Severity Severity           `json:"severity"`
	Seen     string             `json:"seen"`
	Evidence []string           `json:"evidence,omitempty"`
	Meaning  string             `json:"meaning"`
	Fix      string             `json:"fix,omitempty"`
	Figures  map[string]float64 `json:"figures,omitempty"`
}

// Instance is one control-plane pod: a static pod's mirror in kube-system.
type Instance struct {
	Component string    `json:"component"`
	Pod       string    `json:"pod"`
	Node      string    `json:"node"`
	Image     string    `json:"image"`
	ImageID   string    `json:"imageID,omitempty"` // the runtime's digest, as the kubelet reports it
	Version   string    `json:"version"`           // the image's tag
	Ours      bool      `json:"ours"`              // a release of this fork (tag v1.17.3-idc.N)
	Started   time.Time `json:"started,omitempty"` // the running container's start
	// Flags holds the flags the findings read, as the component reads them (unset: absent).
	Flags map[string]string `json:"flags,omitempty"`
}

// Report is the whole answer.
type Report struct {
	Server  string        `json:"server"`
	Started time.Time     `json:"started"`
	Window  time.Duration `json:"-"`
	// WindowSeconds is Window for JSON.
	WindowSeconds float64    `json:"windowSeconds"`
	QPS           float32    `json:"qps"`
	Requests      int        `json:"requests"` // every request made, all GETs
	Instances     []Instance `json:"instances"`
	Findings      []Finding  `json:"findings"`
}

// Finding returns the finding with the ID, or nil.
func (r *Report) Finding(id string) *Finding {
	for i := range r.Findings {
		if r.Findings[i].ID == id {
			return &r.Findings[i]
		}
	}
	return nil
}

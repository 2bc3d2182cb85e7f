// Package cpswap changes the image (and optionally flags) of a kubeadm static-pod manifest
// safely: parsed with k8s.io/api types, backed up outside the manifests directory, written
// atomically, verified, and rolled back on failure.
package cpswap

import (
	"fmt"
	"strings"

	"github.com/pmezard/go-difflib/difflib"
	v1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// Change is what to do to one container of a manifest.
type Change struct {
	// Container to change; empty means the manifest's only container.
	Container string
	// Image replaces the container's image; empty keeps it.
	Image string
	// Flags are set on the container's command, "--name" -> "value", replacing an existing
	// value or appended in the given order.
	Flags []Flag
	// OnlyFor, if set, is the one container name these flags are meant for (a profile's).
	OnlyFor string
}

// Flag is a command-line flag of the component.
type Flag struct{ Name, Value string }

// Profiles are named sets of flags an operator can ask for.
var Profiles = map[string][]Flag{
	// The patched build defaults to leases; saying it in the manifest keeps a later rollback of
	// the image from silently changing the lock type back.
	"leases": {{Name: "--leader-elect-resource-lock", Value: "leases"}},
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
	"kcm-client-rate": {{Name: "--kube-api-qps", Value: "50"}, {Name: "--kube-api-burst", Value: "100"}},
}

// ProfileOnlyFor names the container a profile is meant for, when it is not meant for all.
var ProfileOnlyFor = map[string]string{
	"kcm-client-rate": "kube-controller-manager",
}

// Parse reads a static-pod manifest. Anything but a v1 Pod is an error.
func Parse(data []byte) (*v1.Pod, error) {
	var meta struct{ APIVersion, Kind string }
	if err := yaml.Unmarshal(data, &meta); err != nil {
		return nil, fmt.Errorf("malformed YAML: %v", err)
	}
	if meta.Kind != "Pod" || meta.APIVersion != "v1" {
		return nil, fmt.Errorf("wrong kind: %s %q, want a static-pod manifest (v1 Pod)", meta.APIVersion, meta.Kind)
	}
	pod := &v1.Pod{}
	if err := yaml.UnmarshalStrict(data, pod); err != nil {
		return nil, fmt.Errorf("malformed Pod: %v", err)
	}
	return pod, nil
}

// container finds the container a Change is about.
func container(pod *v1.Pod, name string) (*v1.Container, error) {
	if name == "" {
		if len(pod.Spec.Containers) != 1 {
			names := []string{}
			for _, c := range pod.Spec.Containers {
				names = append(names, c.Name)
			}
			return nil, fmt.Errorf("the Pod has %d containers (%s): name one with --container", len(pod.Spec.Containers), strings.Join(names, ", "))
		}
		return &pod.Spec.Containers[0], nil
	}
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return &pod.Spec.Containers[i], nil
		}
	}
	return nil, fmt.Errorf("no container %q in the Pod", name)
}

// FlagValue returns a flag's value in a command and whether it is set.
func FlagValue(command []string, name string) (string, bool) {
	for _, arg := range command {
		if v, ok := strings.CutPrefix(arg, name+"="); ok {
			return v, true
		}
	}
	return "", false
}

func setFlag(command []string, f Flag) []string {
	for i, arg := range command {
		if arg == f.Name || strings.HasPrefix(arg, f.Name+"=") {
			command[i] = f.Name + "=" + f.Value
			return command
		}
	}
	return append(command, f.Name+"="+f.Value)
}

// Apply returns the manifest with the change made. Only the container's image and command
// change; everything else is re-encoded from the parsed Pod, which for manifests kubeadm wrote
// gives back the same bytes.
func Apply(data []byte, change Change) ([]byte, error) {
	pod, err := Parse(data)
	if err != nil {
		return nil, err
	}
	c, err := container(pod, change.Container)
	if err != nil {
		return nil, err
	}
	if change.OnlyFor != "" && c.Name != change.OnlyFor {
		return nil, fmt.Errorf("these flags are for container %s, the manifest's is %s", change.OnlyFor, c.Name)
	}
	if err := checkLockMigration(c.Command, change.Flags); err != nil {
		return nil, err
	}
	if change.Image != "" {
		c.Image = change.Image
	}
	for _, f := range change.Flags {
		c.Command = setFlag(c.Command, f)
	}
	return yaml.Marshal(pod)
}

// checkLockMigration refuses to move a component to the leases lock from a lock that shares no
// object with it: an old and a new instance would each find the lock free and both lead.
func checkLockMigration(command []string, flags []Flag) error {
	current, set := FlagValue(command, "--leader-elect-resource-lock")
	if !set {
		return nil // the 1.17 default, endpointsleases: shares the Lease
	}
	for _, f := range flags {
		if f.Name != "--leader-elect-resource-lock" || f.Value != "leases" {
			continue
		}
		switch current {
		case "endpoints", "configmaps":
			return fmt.Errorf("refusing to move --leader-elect-resource-lock from %s to leases: the two share no lock object, so old and new instances could both lead. Roll out --leader-elect-resource-lock=%sleases on every master first", current, current)
		}
	}
	return nil
}

// Diff is a unified diff of two manifests.
func Diff(path string, before, after []byte) string {
	diff, _ := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A: difflib.SplitLines(string(before)), B: difflib.SplitLines(string(after)),
		FromFile: path, ToFile: path + " (new)", Context: 2,
	})
	return diff
}

var yamlMarshal = yaml.Marshal

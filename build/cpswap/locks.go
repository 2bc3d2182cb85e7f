package cpswap

import (
	"fmt"
	"sort"
	"strings"
)

// The objects each --leader-elect-resource-lock value takes part in. Two instances exclude each
// other only if their locks share an object: the multilocks (endpointsleases,
// configmapsleases) exist to carry a cluster from one to the other one master at a time.
var lockObjects = map[string][]string{
	"endpoints":        {"Endpoints"},
	"configmaps":       {"ConfigMap"},
	"leases":           {"Lease"},
	"endpointsleases":  {"Endpoints", "Lease"},
	"configmapsleases": {"ConfigMap", "Lease"},
}

const lockFlag = "--leader-elect-resource-lock"

func shareObject(a, b string) bool {
	for _, x := range lockObjects[a] {
		for _, y := range lockObjects[b] {
			if x == y {
				return true
			}
		}
	}
	return false
}

func knownLocks() string {
	var names []string
	for name := range lockObjects {
		names = append(names, name)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

func electing(cl commandLine) bool {
	v, set := cl.Value("--leader-elect")
	return !set || v == "true"
}

// checkLeaderElection refuses a change after which this master's instance could lead beside the
// instances on the other masters, which still run the manifest's current settings. It returns
// notes for the operator.
func checkLeaderElection(before, after commandLine) ([]string, error) {
	if electing(before) && !electing(after) {
		return nil, fmt.Errorf("refusing to turn leader election off (--leader-elect=false): this instance would act beside the leader on the other masters")
	}
	newLock, setAfter := after.Value(lockFlag)
	oldLock, setBefore := before.Value(lockFlag)
	if setAfter {
		if _, ok := lockObjects[newLock]; !ok {
			return nil, fmt.Errorf("%s=%s is not a lock type (known: %s)", lockFlag, newLock, knownLocks())
		}
	}
	if !electing(after) {
		if setAfter && newLock != oldLock {
			return []string{"leader election is off in this manifest (--leader-elect=false): the lock type takes effect only when it is turned on"}, nil
		}
		return nil, nil
	}
	if !setAfter || (setBefore && oldLock == newLock) {
		return nil, nil
	}
	if setBefore {
		if !shareObject(oldLock, newLock) {
			return nil, fmt.Errorf("refusing to move %s from %s to %s: the two share no lock object, so old and new instances could both lead. First roll a lock that shares one with both (e.g. %s) onto every master", lockFlag, oldLock, newLock, bridge(oldLock, newLock))
		}
		return nil, nil
	}
	// Not set: the image's default, endpointsleases for upstream 1.17 and leases for this fork.
	for _, def := range []string{"endpointsleases", "leases"} {
		if !shareObject(def, newLock) {
			return nil, fmt.Errorf("refusing to set %s=%s: the manifest sets no lock, so it runs its image's default (endpointsleases in upstream 1.17, leases in this fork), and %s shares no lock object with %s. Set the lock the other masters run explicitly first", lockFlag, newLock, newLock, def)
		}
	}
	return nil, nil
}

// bridge names a lock that shares an object with both a and b.
func bridge(a, b string) string {
	for _, candidate := range []string{"endpointsleases", "configmapsleases"} {
		if shareObject(candidate, a) && shareObject(candidate, b) {
			return candidate
		}
	}
	return "a multilock"
}

package cpswap

import (
	"fmt"
	"sort"
	"strconv"
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

// electing reads --leader-elect as pflag does (strconv.ParseBool: 1, t, T, TRUE, true, True, ...).
func electing(cl commandLine) (bool, error) {
	v, set := cl.Value("--leader-elect")
	if !set {
		return true, nil
	}
	on, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("--leader-elect=%s is not a boolean", v)
	}
	return on, nil
}

// lockObjectFlags name the lock object; changing them moves the lock as surely as changing its
// type (kube-scheduler 1.17 also reads the deprecated --lock-object-*).
var lockObjectFlags = []string{"--leader-elect-resource-name", "--leader-elect-resource-namespace", "--lock-object-name", "--lock-object-namespace"}

// checkLeaderElection refuses a change after which this master's instance could lead beside the
// instances on the other masters, which still run the manifest's current settings. It returns
// notes for the operator.
func checkLeaderElection(before, after commandLine) ([]string, error) {
	electBefore, err := electing(before)
	if err != nil {
		return nil, err
	}
	electAfter, err := electing(after)
	if err != nil {
		return nil, err
	}
	if electBefore && !electAfter {
		return nil, fmt.Errorf("refusing to turn leader election off (--leader-elect=false): this instance would act beside the leader on the other masters")
	}
	for _, name := range lockObjectFlags {
		old, _ := before.Value(name)
		new, _ := after.Value(name)
		if old != new && electAfter {
			return nil, fmt.Errorf("refusing to change %s (%q to %q): this instance would lock another object than the other masters, and both would lead", name, old, new)
		}
	}
	newLock, setAfter := after.Value(lockFlag)
	oldLock, setBefore := before.Value(lockFlag)
	if setAfter {
		if _, ok := lockObjects[newLock]; !ok {
			return nil, fmt.Errorf("%s=%s is not a lock type (known: %s)", lockFlag, newLock, knownLocks())
		}
	}
	if !electAfter {
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

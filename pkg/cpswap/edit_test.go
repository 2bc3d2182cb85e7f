package cpswap

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	sigyaml "sigs.k8s.io/yaml"

	"github.com/idc-lts/kube-1.17/test/harness"
)

const newImage = "registry.example.com/k8s/kube-controller-manager:v1.17.3-idc.1"

func kubeadmManifests(t *testing.T) string { return harness.KubeadmManifests(t) }

func read(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func write(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// kcmManifest is kubeadm's kube-controller-manager manifest, with edits made by sed-like
// replacements of whole lines.
func kcmManifest(t *testing.T, replace ...string) []byte {
	t.Helper()
	data := string(read(t, filepath.Join(kubeadmManifests(t), "kube-controller-manager.yaml")))
	for i := 0; i+1 < len(replace); i += 2 {
		if !strings.Contains(data, replace[i]) {
			t.Fatalf("kubeadm's manifest has no %q", replace[i])
		}
		data = strings.Replace(data, replace[i], replace[i+1], 1)
	}
	return []byte(data)
}

func profiles(t *testing.T, names string) []Profile {
	t.Helper()
	p, err := LookupProfiles(names)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// changedLines returns the lines a diff removes and adds, trimmed.
func changedLines(diff string) (removed, added []string) {
	for _, line := range strings.Split(diff, "\n") {
		switch {
		case strings.HasPrefix(line, "---") || strings.HasPrefix(line, "+++"):
		case strings.HasPrefix(line, "-"):
			removed = append(removed, strings.TrimSpace(line[1:]))
		case strings.HasPrefix(line, "+"):
			added = append(added, strings.TrimSpace(line[1:]))
		}
	}
	return removed, added
}

// TestInPlaceEditRewritesOnlyTheEditedLines runs the byte editor itself over kubeadm's manifests:
// rewriting every command word and the image with their own values gives back the same bytes.
func TestInPlaceEditRewritesOnlyTheEditedLines(t *testing.T) {
	dir := kubeadmManifests(t)
	for _, name := range []string{"kube-controller-manager.yaml", "kube-scheduler.yaml", "kube-apiserver.yaml"} {
		original := read(t, filepath.Join(dir, name))
		pod, err := Parse(original)
		if err != nil {
			t.Fatal(err)
		}
		c := pod.Spec.Containers[0]
		var edits []edit
		for i := range c.Command {
			text := c.Command[i]
			edits = append(edits, edit{list: inCommand, index: i, text: &text})
		}
		got, err := editBytes(original, c.Name, c.Image, edits)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, original) {
			t.Errorf("%s changed by rewriting its lines with their own values:\n%s", name, Diff(name, original, got))
		}
	}
}

// TestInPlaceEditKeepsLineEndingsAndTabComments: a CRLF manifest stays CRLF, inserted lines too;
// a comment after a tab stays.
func TestInPlaceEditKeepsLineEndingsAndTabComments(t *testing.T) {
	original := kcmManifest(t, "    - --leader-elect=true\n", "    - --leader-elect=true\t# three masters\n")
	crlf := bytes.ReplaceAll(original, []byte("\n"), []byte("\r\n"))
	e, err := Edit(crlf, Change{Image: newImage, Profiles: profiles(t, "leases")})
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(e.After, []byte("\n")); n != bytes.Count(e.After, []byte("\r\n")) {
		t.Errorf("%d lines, %d of them CRLF", n, bytes.Count(e.After, []byte("\r\n")))
	}
	e, err = Edit(original, Change{Flags: []Flag{{Name: "--leader-elect", Value: "true"}, {Name: "--kube-api-qps", Value: "30"}}})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(e.After, []byte("    - --leader-elect=true\t# three masters\n")) {
		t.Errorf("the tab comment was lost:\n%s", Diff("m", original, e.After))
	}
}

// TestRepeatedListFlagsAreNotRewritten: pflag merges repeated list and map flags, so "the last
// one wins" does not hold for them; cpswap refuses to set one that is repeated.
func TestRepeatedListFlagsAreNotRewritten(t *testing.T) {
	original := kcmManifest(t, "    - --leader-elect=true\n", "    - --leader-elect=true\n    - --feature-gates=A=true\n    - --feature-gates=B=false\n")
	if _, err := Edit(original, Change{Flags: []Flag{{Name: "--feature-gates", Value: "C=true"}}}); err == nil || !strings.Contains(err.Error(), "--feature-gates appears 2 times") {
		t.Errorf("error %v, want the repeated list flag refused", err)
	}
}

func TestPlanChangesOnlyImageAndFlags(t *testing.T) {
	manifest := filepath.Join(kubeadmManifests(t), "kube-controller-manager.yaml")
	e, err := Plan(manifest, Change{Image: newImage, Profiles: profiles(t, "leases"), Flags: []Flag{{Name: "--kube-api-qps", Value: "100"}}})
	if err != nil {
		t.Fatal(err)
	}
	removed, added := changedLines(Diff(manifest, e.Before, e.After))
	wantAdded := []string{"- --leader-elect-resource-lock=leases", "- --kube-api-qps=100", "image: " + newImage}
	if len(removed) != 1 || !strings.HasPrefix(removed[0], "image: k8s.gcr.io/kube-controller-manager:v1.17.3") {
		t.Errorf("removed lines %q, want only the old image", removed)
	}
	if strings.Join(added, "|") != strings.Join(wantAdded, "|") {
		t.Errorf("added lines %q, want %q", added, wantAdded)
	}
	if !bytes.Equal(read(t, manifest), e.Before) {
		t.Error("plan wrote the manifest")
	}
}

// TestEditKeepsTheOperatorsComments: a manifest re-encoded from the typed Pod loses every
// comment and blank line an operator's tooling put there; edited in place, only the changed
// lines differ.
func TestEditKeepsTheOperatorsComments(t *testing.T) {
	original := append([]byte("# Ansible managed: do not edit by hand\n\n"), kcmManifest(t,
		"    - --leader-elect=true\n", "    - --leader-elect=true   # keep on: three masters\n",
		"  hostNetwork: true\n", "\n  # host network: the component serves on the node\n  hostNetwork: true\n",
		"    image: k8s.gcr.io/kube-controller-manager:v1.17.3\n", "    image: \"k8s.gcr.io/kube-controller-manager:v1.17.3\" # pinned by CAB-123\n",
	)...)
	e, err := Edit(original, Change{Image: newImage, Profiles: profiles(t, "leases")})
	if err != nil {
		t.Fatal(err)
	}
	diff := Diff("m", original, e.After)
	removed, added := changedLines(diff)
	if want := []string{`image: "k8s.gcr.io/kube-controller-manager:v1.17.3" # pinned by CAB-123`}; strings.Join(removed, "|") != strings.Join(want, "|") {
		t.Errorf("removed %q, want %q", removed, want)
	}
	// The operator's quotes stay too.
	if want := []string{"- --leader-elect-resource-lock=leases", `image: "` + newImage + `" # pinned by CAB-123`}; strings.Join(added, "|") != strings.Join(want, "|") {
		t.Errorf("added %q, want %q", added, want)
	}
	for _, comment := range []string{"# Ansible managed", "# keep on: three masters", "# host network"} {
		if !bytes.Contains(e.After, []byte(comment)) {
			t.Errorf("comment %q lost", comment)
		}
	}
}

// TestFlagsAreReadAsTheComponentsReadThem: pflag reads "--f v" as well as "--f=v", lets the last
// occurrence win, and reads args: after command:. A check that sees only "--f=v" in command: lets a
// manifest through that runs the endpoints lock, and an edit that leaves a stray value word or an
// earlier occurrence behind is not what runs.
func TestFlagsAreReadAsTheComponentsReadThem(t *testing.T) {
	const lock = "    - --leader-elect=true\n"
	tests := []struct {
		name     string
		replace  []string
		change   Change
		wantErr  string
		wantLock string // effective lock after the change
		noWord   string // a command-line word that must be gone
	}{
		{
			name:    "lock as two list items, endpoints",
			replace: []string{lock, lock + "    - --leader-elect-resource-lock\n    - endpoints\n"},
			change:  Change{Profiles: profiles(t, "leases")},
			wantErr: "from endpoints to leases",
		},
		{
			name:     "lock as two list items, endpointsleases",
			replace:  []string{lock, lock + "    - --leader-elect-resource-lock\n    - endpointsleases\n"},
			change:   Change{Profiles: profiles(t, "leases")},
			wantLock: "leases", noWord: "endpointsleases",
		},
		{
			name:    "repeated flag, the last one is endpoints",
			replace: []string{lock, lock + "    - --leader-elect-resource-lock=endpointsleases\n    - --leader-elect-resource-lock=endpoints\n"},
			change:  Change{Profiles: profiles(t, "leases")},
			wantErr: "from endpoints to leases",
		},
		{
			name:     "repeated flag: the appended profile value is the only one left",
			replace:  []string{lock, lock + "    - --leader-elect-resource-lock=endpointsleases\n    - --kube-api-qps=20\n    - --leader-elect-resource-lock=endpointsleases\n"},
			change:   Change{Profiles: profiles(t, "leases")},
			wantLock: "leases", noWord: "--leader-elect-resource-lock=endpointsleases",
		},
		{
			name:    "lock in args after command",
			replace: []string{"    image: ", "    args:\n    - --leader-elect-resource-lock=endpoints\n    image: "},
			change:  Change{Profiles: profiles(t, "leases")},
			wantErr: "from endpoints to leases",
		},
		{
			name:    "leader-elect false as two words is still true, as pflag reads a boolean",
			replace: []string{lock, "    - --leader-elect\n    - \"false\"\n    - --leader-elect-resource-lock=endpoints\n"},
			change:  Change{Profiles: profiles(t, "leases")},
			wantErr: "from endpoints to leases",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			original := kcmManifest(t, tc.replace...)
			e, err := Edit(original, tc.change)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			pod, err := Parse(e.After)
			if err != nil {
				t.Fatal(err)
			}
			if got, _ := FlagValue(pod, "", lockFlag); got != tc.wantLock {
				t.Errorf("effective lock %q, want %q", got, tc.wantLock)
			}
			words := append(append([]string{}, pod.Spec.Containers[0].Command...), pod.Spec.Containers[0].Args...)
			for _, w := range words {
				if w == tc.noWord {
					t.Errorf("%q is still on the command line: %q", tc.noWord, words)
				}
			}
			if n := strings.Count(strings.Join(words, " "), lockFlag); n != 1 {
				t.Errorf("%s appears %d times, want once: %q", lockFlag, n, words)
			}
		})
	}
}

// TestArgsOnlyManifestKeepsTheImageEntrypoint: on a manifest that passes flags in args: only, a
// profile goes into args; creating command: would replace the image's entrypoint.
func TestArgsOnlyManifestKeepsTheImageEntrypoint(t *testing.T) {
	original := kcmManifest(t, "  - command:\n    - kube-controller-manager\n", "  - args:\n")
	e, err := Edit(original, Change{Profiles: profiles(t, "leases,kcm-client-rate")})
	if err != nil {
		t.Fatal(err)
	}
	pod, _ := Parse(e.After)
	c := pod.Spec.Containers[0]
	if len(c.Command) != 0 {
		t.Errorf("command: %q created", c.Command)
	}
	for _, want := range []string{"--leader-elect-resource-lock=leases", "--kube-api-qps=50", "--kube-api-burst=100"} {
		if !strings.Contains(strings.Join(c.Args, " "), want) {
			t.Errorf("args lack %s: %q", want, c.Args)
		}
	}
}

// TestLeaderElectionMoves: every lock change that leaves an old and a new instance without a
// shared lock object is refused, and so is turning leader election off.
func TestLeaderElectionMoves(t *testing.T) {
	tests := []struct {
		from, to string
		off      bool   // the manifest has --leader-elect=false
		elect    string // the manifest's --leader-elect value, if not "true"
		flags    []Flag
		wantErr  string
		wantNote string
	}{
		{from: "endpoints", to: "leases", wantErr: "share no lock object"},
		{from: "configmaps", to: "leases", wantErr: "share no lock object"},
		{from: "leases", to: "endpoints", wantErr: "First roll a lock that shares one with both (e.g. endpointsleases)"},
		{from: "leases", to: "configmaps", wantErr: "share no lock object"},
		{from: "endpoints", to: "configmapsleases", wantErr: "share no lock object"},
		{from: "endpointsleases", to: "leases"},
		{from: "leases", to: "endpointsleases"},
		{from: "endpoints", to: "endpointsleases"},
		{from: "", to: "leases"},
		{from: "", to: "endpoints", wantErr: "sets no lock"},
		{from: "", to: "nonsense", wantErr: "not a lock type"},
		{from: "endpointsleases", flags: []Flag{{Name: "--leader-elect", Value: "false"}}, wantErr: "turn leader election off"},
		{from: "endpoints", to: "leases", off: true, wantNote: "leader election is off"},
		// pflag reads booleans with strconv.ParseBool: "True" and "1" are on.
		{from: "endpoints", to: "leases", elect: "True", wantErr: "share no lock object"},
		{from: "endpointsleases", elect: "1", flags: []Flag{{Name: "--leader-elect", Value: "false"}}, wantErr: "turn leader election off"},
		{from: "endpointsleases", elect: "yes", to: "leases", wantErr: "--leader-elect=yes is not a boolean"},
		{from: "leases", flags: []Flag{{Name: "--leader-elect-resource-name", Value: "kcm2"}}, wantErr: "refusing to change --leader-elect-resource-name"},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%s->%s off=%v elect=%s %v", tc.from, tc.to, tc.off, tc.elect, tc.flags), func(t *testing.T) {
			lines := "    - --leader-elect=true\n"
			if tc.off {
				lines = "    - --leader-elect=false\n"
			}
			if tc.elect != "" {
				lines = "    - --leader-elect=" + tc.elect + "\n"
			}
			if tc.from != "" {
				lines += "    - --leader-elect-resource-lock=" + tc.from + "\n"
			}
			original := kcmManifest(t, "    - --leader-elect=true\n", lines)
			flags := tc.flags
			if tc.to != "" {
				flags = append(flags, Flag{Name: lockFlag, Value: tc.to})
			}
			e, err := Edit(original, Change{Flags: flags})
			switch {
			case tc.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
			case err != nil:
				t.Fatalf("refused: %v", err)
			case tc.wantNote != "" && !strings.Contains(strings.Join(e.Notes, "|"), tc.wantNote):
				t.Errorf("notes %q, want %q", e.Notes, tc.wantNote)
			}
		})
	}
}

// TestSchedulerWithConfigRefusesLeaderElectionFlags: kube-scheduler 1.17 started with --config
// takes leader election from the file and ignores the flags; cpswap says so instead of writing
// a flag that does nothing.
func TestSchedulerWithConfigRefusesLeaderElectionFlags(t *testing.T) {
	data := string(read(t, filepath.Join(kubeadmManifests(t), "kube-scheduler.yaml")))
	data = strings.Replace(data, "    - --leader-elect=true\n", "    - --leader-elect=true\n    - --config=/etc/kubernetes/scheduler-config.yaml\n", 1)
	if _, err := Edit([]byte(data), Change{Profiles: profiles(t, "leases")}); err == nil || !strings.Contains(err.Error(), "ignores the --leader-elect-resource-lock flag") {
		t.Errorf("error %v, want the --config case named", err)
	}
}

// TestClientRateProfile: the kcm-client-rate profile sets both limits on kube-controller-manager,
// keeps an operator's higher value, and is refused for kube-scheduler.
func TestClientRateProfile(t *testing.T) {
	dir := kubeadmManifests(t)
	change := Change{Image: newImage, Profiles: profiles(t, "kcm-client-rate")}
	e, err := Plan(filepath.Join(dir, "kube-controller-manager.yaml"), change)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"- --kube-api-qps=50", "- --kube-api-burst=100"} {
		if !strings.Contains(string(e.After), want) {
			t.Errorf("kube-controller-manager manifest lacks %q after the profile", want)
		}
	}
	higher := kcmManifest(t, "    - --leader-elect=true\n", "    - --leader-elect=true\n    - --kube-api-qps\n    - \"300\"\n    - --kube-api-burst=80\n")
	e, err = Edit(higher, Change{Profiles: change.Profiles})
	if err != nil {
		t.Fatal(err)
	}
	pod, _ := Parse(e.After)
	if qps, _ := FlagValue(pod, "", "--kube-api-qps"); qps != "300" {
		t.Errorf("--kube-api-qps %s, want the operator's 300 kept", qps)
	}
	if burst, _ := FlagValue(pod, "", "--kube-api-burst"); burst != "100" {
		t.Errorf("--kube-api-burst %s, want 80 raised to 100", burst)
	}
	if !strings.Contains(strings.Join(e.Notes, "|"), "--kube-api-qps=300 kept") {
		t.Errorf("notes %q do not say the higher qps was kept", e.Notes)
	}
	scheduler := filepath.Join(dir, "kube-scheduler.yaml")
	original := read(t, scheduler)
	change.Image = ""
	if _, err := Plan(scheduler, change); err == nil || !strings.Contains(err.Error(), "is for kube-controller-manager") {
		t.Errorf("kube-scheduler manifest with the kcm profile: error %v, want it refused", err)
	}
	if !bytes.Equal(read(t, scheduler), original) {
		t.Error("the refused plan changed the kube-scheduler manifest")
	}
}

func TestImageReferences(t *testing.T) {
	const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	tests := []struct{ ref, wantErr, wantDigest string }{
		{ref: newImage},
		{ref: "registry.example.com:5000/k8s/kube-controller-manager@" + digest, wantDigest: digest},
		{ref: newImage + "@" + digest, wantDigest: digest},
		{ref: "kube-controller-manager:v1.17.3"},
		{ref: "", wantErr: "--image is empty"},
		{ref: "--profile", wantErr: "invalid reference format"},
		{ref: "registry.example.com/k8s/kube-controller-manager", wantErr: "names no tag or digest"},
		{ref: "registry.example.com/k8s/kube-scheduler:v1.17.3-idc.1", wantErr: "is not a kube-controller-manager image"},
		{ref: "Registry.example.com/K8s/kube-controller-manager:v1", wantErr: "invalid reference format"},
		{ref: "registry.example.com/k8s/kube-controller-manager:v1@sha256:abc", wantErr: "invalid"},
	}
	for _, tc := range tests {
		got, err := ParseImage(tc.ref, "kube-controller-manager")
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("%q: %v", tc.ref, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%q: error %v, want %q", tc.ref, err, tc.wantErr)
		case err == nil && got.Digest != tc.wantDigest:
			t.Errorf("%q: digest %q, want %q", tc.ref, got.Digest, tc.wantDigest)
		}
	}
}

// TestBooleanFlagsMatchTheComponents: the flags that never take the next word, as
// kube-controller-manager and kube-scheduler v1.17.3 print them in --help (no value type, or an
// optional one).
func TestBooleanFlagsMatchTheComponents(t *testing.T) {
	untyped := regexp.MustCompile(`(?m)^\s+(?:-[a-z], )?--([a-z0-9-]+)(?: [a-zA-Z0-9.]+\[=[^\]]*\])? {2,}`)
	found := map[string]bool{}
	for _, component := range []string{"kube-controller-manager", "kube-scheduler"} {
		out, _ := exec.Command(harness.Binary(t, "stock", component), "--help").CombinedOutput()
		for _, m := range untyped.FindAllStringSubmatch(string(out), -1) {
			found[m[1]] = true
		}
	}
	if missing, extra := differences(found, booleanFlags); len(missing)+len(extra) > 0 {
		t.Errorf("booleanFlags differs from the components' --help: missing %q, not in --help %q", missing, extra)
	}
}

// TestFlagsTheComponentDoesNotHaveAreRefused: a misspelt or foreign flag, or a profile on a
// component it does not belong to, would keep the component from starting; each is refused
// before anything changes, naming the flag (and the likely one meant).
func TestFlagsTheComponentDoesNotHaveAreRefused(t *testing.T) {
	dir := kubeadmManifests(t)
	leases, _ := LookupProfiles("leases")
	for _, tc := range []struct {
		name     string
		manifest string
		change   Change
		wantErr  string
	}{
		{name: "a typo", manifest: "kube-controller-manager.yaml", change: Change{Flags: []Flag{{Name: "--kube-api-qsp", Value: "50"}}},
			wantErr: "--kube-api-qsp is not a flag of kube-controller-manager v1.17.3 (its --help lists no such flag); did you mean --kube-api-qps?"},
		{name: "three dashes", manifest: "kube-scheduler.yaml", change: Change{Flags: []Flag{{Name: "---x", Value: "1"}}},
			wantErr: "---x is not a flag of kube-scheduler v1.17.3"},
		{name: "another component's flag", manifest: "kube-scheduler.yaml", change: Change{Flags: []Flag{{Name: "--concurrent-endpoint-syncs", Value: "10"}}},
			wantErr: "--concurrent-endpoint-syncs is not a flag of kube-scheduler v1.17.3"},
		{name: "a profile on kube-apiserver", manifest: "kube-apiserver.yaml", change: Change{Profiles: leases},
			wantErr: "profile leases is for kube-controller-manager and kube-scheduler, this manifest runs kube-apiserver"},
		{name: "a flag on kube-apiserver", manifest: "kube-apiserver.yaml", change: Change{Flags: []Flag{{Name: "--v", Value: "2"}}},
			wantErr: "cpswap sets flags of kube-controller-manager and kube-scheduler only; this manifest runs kube-apiserver"},
		{name: "a real flag", manifest: "kube-scheduler.yaml", change: Change{Flags: []Flag{{Name: "--kube-api-qps", Value: "100"}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Plan(filepath.Join(dir, tc.manifest), tc.change)
			if (tc.wantErr == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("error %v, want %q", err, tc.wantErr)
			}
		})
	}
}

// TestComponentFlagsMatchTheComponents: componentFlags lists exactly the flags the built
// kube-controller-manager and kube-scheduler v1.17.3 print in --help.
func TestComponentFlagsMatchTheComponents(t *testing.T) {
	listed := regexp.MustCompile(`(?m)^\s+(?:-[a-z], )?(--[a-z0-9-]+)`)
	for component, known := range componentFlags {
		out, _ := exec.Command(harness.Binary(t, "stock", component), "--help").CombinedOutput()
		found := map[string]bool{}
		for _, m := range listed.FindAllStringSubmatch(string(out), -1) {
			found[m[1]] = true
		}
		if missing, extra := differences(found, known); len(found) < 50 || len(missing)+len(extra) > 0 {
			t.Errorf("%s: %d flags in --help; componentFlags misses %q and lists %q that --help does not", component, len(found), missing, extra)
		}
	}
}

// differences lists, sorted, what found has and listed lacks (missing), and the reverse (extra).
func differences(found, listed map[string]bool) (missing, extra []string) {
	for name := range found {
		if !listed[name] {
			missing = append(missing, name)
		}
	}
	for name := range listed {
		if !found[name] {
			extra = append(extra, name)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	return missing, extra
}

// TestFlagsAreExpandedAsTheKubeletExpandsThem: $(VAR) in a manifest's flags reaches the process
// expanded from the container's env (so the command-line check can pass); a variable whose value
// comes from elsewhere (valueFrom) cannot be known, and says to turn the check off.
func TestFlagsAreExpandedAsTheKubeletExpandsThem(t *testing.T) {
	c := &v1.Container{
		Name:    "kube-controller-manager",
		Command: []string{"kube-controller-manager", "--a=$(A)", "--b=$(B)"},
		Args:    []string{"--escaped=$$(A)", "--undefined=$(NOPE)", "--dollar=$5", "--open=$(A"},
		Env: []v1.EnvVar{
			{Name: "A", Value: "x"},
			{Name: "B", Value: "$(A)-y"},
			{Name: "POD_IP", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
		},
	}
	got, err := containerArgs(c)
	want := []string{"--a=x", "--b=x-y", "--escaped=$(A)", "--undefined=$(NOPE)", "--dollar=$5", "--open=$(A"}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("got %q, %v; want %q", got, err, want)
	}
	c.Args = append(c.Args, "--bind-address=$(POD_IP)")
	if _, err := containerArgs(c); err == nil || !strings.Contains(err.Error(), "$(POD_IP)") || !strings.Contains(err.Error(), "--check-cmdline=false") {
		t.Errorf("a valueFrom reference: %v", err)
	}
}

// TestSmallInputsAreCheckedAtTheDoor: per-architecture repositories are the component's images;
// a flag value with a newline is refused by name, not as an internal error.
func TestSmallInputsAreCheckedAtTheDoor(t *testing.T) {
	for _, tc := range []struct {
		image   string
		wantErr string
	}{
		{image: "registry.example.com/k8s/kube-controller-manager-amd64:v1.17.3-idc.1"},
		{image: "registry.example.com/k8s/kube-controller-manager-arm64:v1.17.3-idc.1"},
		{image: "registry.example.com/k8s/kube-controller-manager-debug:v1.17.3-idc.1", wantErr: "is not a kube-controller-manager image"},
		{image: "registry.example.com/k8s/kube-scheduler-amd64:v1.17.3-idc.1", wantErr: "is not a kube-controller-manager image"},
	} {
		_, err := ParseImage(tc.image, "kube-controller-manager")
		if (tc.wantErr == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("ParseImage(%s): %v, want %q", tc.image, err, tc.wantErr)
		}
	}
	if _, err := ParseFlag("--kube-api-qps=50\n--x=1"); err == nil || !strings.Contains(err.Error(), "control character") {
		t.Errorf("a newline in a flag value: %v", err)
	}
	if f, err := ParseFlag("--v=2"); err != nil || f.Value != "2" {
		t.Errorf("--v=2: %+v %v", f, err)
	}
}

// TestJSONManifestStaysJSON: a manifest written as JSON keeps its form when the image changes (it
// must not come back as YAML); a flag change, which needs a block list, is refused saying so.
func TestJSONManifestStaysJSON(t *testing.T) {
	dir := kubeadmManifests(t)
	asJSON, err := sigyaml.YAMLToJSON(read(t, filepath.Join(dir, "kube-controller-manager.yaml")))
	if err != nil {
		t.Fatal(err)
	}
	manifest := filepath.Join(t.TempDir(), "kube-controller-manager.json")
	if err := os.WriteFile(manifest, asJSON, 0o600); err != nil {
		t.Fatal(err)
	}
	e, err := Plan(manifest, Change{Image: newImage})
	if err != nil {
		t.Fatal(err)
	}
	if !json.Valid(e.After) || !bytes.Contains(e.After, []byte(`"image":"`+newImage+`"`)) {
		t.Errorf("the image change did not keep the manifest JSON:\n%s", e.After)
	}
	if _, err := Plan(manifest, Change{Flags: []Flag{{Name: "--kube-api-qps", Value: "50"}}}); err == nil || !strings.Contains(err.Error(), "a JSON manifest") {
		t.Errorf("a flag change on a JSON manifest: %v", err)
	}
}

// Package cpswap changes the image (and optionally flags) of a kubeadm static-pod manifest
// safely: edited in place (the operator's comments and formatting stay), checked as a k8s.io/api
// Pod, backed up outside the manifests directory, written atomically, verified, and rolled back
// on failure; one apply at a time per manifest, with a journal and a history beside the backups.
package cpswap

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/pmezard/go-difflib/difflib"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/yaml"
)

// Change is what to do to one container of a manifest.
type Change struct {
	// Container to change; empty means the manifest's only container.
	Container string
	// Image replaces the container's image; empty keeps it.
	Image string
	// Profiles and then Flags are set on the container's command line; a later value of the
	// same flag wins.
	Profiles []Profile
	Flags    []Flag
}

// Edited is a manifest with a change made.
type Edited struct {
	Before, After []byte
	// Component is what the container runs (command[0], else the container's name).
	Component string
	Container string
	Image     ImageRef // the new image when the change sets one
	// Flags are the flags the change sets, "--name=value", after profiles and floors.
	Flags []string
	// Notes tell the operator about choices made (a higher limit kept, ...).
	Notes []string
	// original and changed are the container as the manifest has it before and after.
	original, changed *v1.Container
}

// Unchanged reports a change that leaves the manifest byte for byte as it is.
func (e *Edited) Unchanged() bool { return bytes.Equal(e.Before, e.After) }

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

// componentOf names what a container runs.
func componentOf(c *v1.Container, cl commandLine) string {
	if cl.binary != "" {
		return cl.binary
	}
	return c.Name
}

// Edit returns the manifest with the change made, or why it cannot be made. Only the lines of the
// container's image and of the flags the change sets are touched, and the result must parse as
// exactly the Pod the change asks for.
func Edit(data []byte, change Change) (*Edited, error) {
	pod, err := Parse(data)
	if err != nil {
		return nil, err
	}
	c, err := container(pod, change.Container)
	if err != nil {
		return nil, err
	}
	before := parseCommandLine(c)
	out := &Edited{Before: data, Container: c.Name, Component: componentOf(c, before), original: c}
	switch before.binary {
	case "sh", "bash", "dash", "ash", "busybox", "env":
		return nil, fmt.Errorf("container %s starts %s: cpswap cannot see the component's flags through a shell", c.Name, before.binary)
	}
	flags, notes, err := resolveFlags(out.Component, before, change)
	if err != nil {
		return nil, err
	}
	out.Notes = notes
	var edits []edit
	for _, f := range flags {
		edits = append(edits, before.setFlag(f.Name, f.Value)...)
		out.Flags = append(out.Flags, f.Name+"="+f.Value)
	}
	expected := pod.DeepCopy()
	ec, _ := container(expected, c.Name)
	out.changed = ec
	image := ""
	if change.Image != "" {
		if out.Image, err = ParseImage(change.Image, out.Component); err != nil {
			return nil, err
		}
		if change.Image != c.Image {
			image = change.Image
			ec.Image = image
		}
	}
	if err := applyEdits(ec, edits); err != nil {
		return nil, err
	}
	after := parseCommandLine(ec)
	for _, f := range flags {
		if got, ok := after.Value(f.Name); !ok || got != f.Value {
			return nil, fmt.Errorf("%s=%s would not take effect where cpswap can write it (after a \"--\"?)", f.Name, f.Value)
		}
	}
	electionNotes, err := checkLeaderElection(before, after)
	if err != nil {
		return nil, err
	}
	out.Notes = append(out.Notes, electionNotes...)
	if image == "" && len(edits) == 0 {
		out.After = data
		return out, nil
	}
	if out.After, err = editBytes(data, c.Name, image, edits); err != nil {
		return nil, fmt.Errorf("cannot edit the manifest in place: %v", err)
	}
	got, err := Parse(out.After)
	if err != nil || !equality.Semantic.DeepEqual(got, expected) {
		return nil, fmt.Errorf("internal error: the edited manifest does not read back as the intended Pod (%v); nothing changed", err)
	}
	return out, nil
}

// resolveFlags merges profiles and flags (the last value of a name wins), applies floors, and
// refuses flags meant for another component or ignored by it.
func resolveFlags(component string, before commandLine, change Change) ([]Flag, []string, error) {
	var all []Flag
	known, managed := componentFlags[component]
	for _, p := range change.Profiles {
		if p.OnlyFor != "" && p.OnlyFor != component {
			return nil, nil, fmt.Errorf("profile %s is for %s, this manifest runs %s", p.Name, p.OnlyFor, component)
		}
		if !managed {
			return nil, nil, fmt.Errorf("profile %s is for kube-controller-manager and kube-scheduler, this manifest runs %s", p.Name, component)
		}
		all = append(all, p.Flags...)
	}
	for _, f := range change.Flags {
		switch {
		case !managed:
			return nil, nil, fmt.Errorf("cpswap sets flags of kube-controller-manager and kube-scheduler only; this manifest runs %s", component)
		case !known[f.Name]:
			return nil, nil, fmt.Errorf("%s is not a flag of %s v1.17.3 (its --help lists no such flag)%s: the component would not start", f.Name, component, didYouMean(f.Name, known))
		}
	}
	all = append(all, change.Flags...)
	var flags []Flag
	index := map[string]int{}
	for _, f := range all {
		if i, ok := index[f.Name]; ok {
			flags[i] = f
			continue
		}
		index[f.Name] = len(flags)
		flags = append(flags, f)
	}
	var notes []string
	for i, f := range flags {
		if n := before.count(f.Name); n > 1 && !scalarFlags[f.Name] {
			return nil, nil, fmt.Errorf("%s appears %d times: the component may merge the occurrences (a list or map flag), so cpswap will not set it; leave one in the manifest first", f.Name, n)
		}
		if strings.HasPrefix(f.Name, "--leader-elect") && component == "kube-scheduler" {
			if config, ok := before.Value("--config"); ok {
				return nil, nil, fmt.Errorf("kube-scheduler runs with --config %s: in 1.17 it ignores the %s flag then; set leaderElection in that file instead", config, f.Name)
			}
		}
		if !f.AtLeast {
			continue
		}
		current, ok := before.Value(f.Name)
		if !ok {
			continue
		}
		have, err1 := strconv.ParseFloat(current, 64)
		want, err2 := strconv.ParseFloat(f.Value, 64)
		if err1 == nil && err2 == nil && have > want {
			notes = append(notes, fmt.Sprintf("%s=%s kept: it is already above the profile's %s", f.Name, current, f.Value))
			flags[i].Value = current
		}
	}
	return flags, notes, nil
}

// FlagValue returns the effective value of a flag of the named container (its last
// occurrence on command and args), as the component reads it.
func FlagValue(pod *v1.Pod, containerName, name string) (string, bool) {
	c, err := container(pod, containerName)
	if err != nil {
		return "", false
	}
	return parseCommandLine(c).Value(name)
}

// Diff is a unified diff of two manifests.
func Diff(path string, before, after []byte) string {
	diff, _ := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A: difflib.SplitLines(string(before)), B: difflib.SplitLines(string(after)),
		FromFile: path, ToFile: path + " (new)", Context: 2,
	})
	return diff
}

// ComponentArgs are the flags the changed container runs with: command[1:] and args (command
// replaces the image's entrypoint, args follow it), the end of the new process's command line.
func ComponentArgs(e *Edited) ([]string, error) { return containerArgs(e.changed) }

// OriginalArgs are the flags the manifest gave the component before the change: the old process
// is the one whose command line ends with them.
func OriginalArgs(e *Edited) ([]string, error) { return containerArgs(e.original) }

// containerArgs are the words after the binary (command[1:] and args) as the process gets them:
// the kubelet expands $(VAR) from the container's env first. A reference to a variable whose
// value the manifest does not hold (valueFrom) cannot be expanded here: that is an error.
func containerArgs(c *v1.Container) ([]string, error) {
	words := []string{}
	if len(c.Command) > 1 {
		words = append(words, c.Command[1:]...)
	}
	words = append(words, c.Args...)
	env := map[string]string{}
	unknown := map[string]bool{}
	for _, e := range c.Env {
		if e.ValueFrom != nil {
			unknown[e.Name] = true
			continue
		}
		value, _ := expand(e.Value, env, nil)
		env[e.Name], unknown[e.Name] = value, false
	}
	for i, w := range words {
		expanded, missing := expand(w, env, unknown)
		if missing != "" {
			return nil, fmt.Errorf("container %s's flag %q refers to $(%s), whose value comes from elsewhere (valueFrom): cpswap cannot know the command line the kubelet gives it; use --check-cmdline=false", c.Name, w, missing)
		}
		words[i] = expanded
	}
	return words, nil
}

// expand replaces $(NAME) as the kubelet does (k8s.io/kubernetes/third_party/forked/golang/
// expansion): a defined NAME by its value, "$$" by "$", anything else as it is. missing names the
// first reference to a variable in unknown.
func expand(s string, env map[string]string, unknown map[string]bool) (out, missing string) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch next := s[i+1]; {
		case next == '$':
			b.WriteByte('$')
			i++
		case next == '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				b.WriteString(s[i:])
				return b.String(), missing
			}
			name := s[i+2 : i+2+end]
			if value, ok := env[name]; ok && !unknown[name] {
				b.WriteString(value)
			} else {
				if unknown[name] && missing == "" {
					missing = name
				}
				b.WriteString(s[i : i+3+end])
			}
			i += 2 + end
		default:
			b.WriteByte('$')
		}
	}
	return b.String(), missing
}

// LeaseOf is the leader Lease the changed component uses: kube-system/<component> unless its
// flags name another object; none (two empty strings) for kube-apiserver, which elects no leader.
func LeaseOf(e *Edited) (namespace, name string) {
	if e.Component == KubeAPIServer {
		return "", ""
	}
	namespace, name = "kube-system", e.Component
	cl := parseCommandLine(e.changed)
	for _, f := range []struct {
		flag string
		into *string
	}{
		{"--lock-object-namespace", &namespace}, {"--leader-elect-resource-namespace", &namespace},
		{"--lock-object-name", &name}, {"--leader-elect-resource-name", &name},
	} {
		if v, ok := cl.Value(f.flag); ok && v != "" {
			*f.into = v
		}
	}
	return namespace, name
}

// didYouMean suggests the known flag closest to a misspelt one (at most two edits away).
func didYouMean(name string, known map[string]bool) string {
	best, bestDistance := "", 3
	for k := range known {
		if d := editDistance(name, k); d < bestDistance || (d == bestDistance && k < best) {
			best, bestDistance = k, d
		}
	}
	if best == "" {
		return ""
	}
	return "; did you mean " + best + "?"
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

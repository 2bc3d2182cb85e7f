package cpswap

import (
	"fmt"
	"path"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// A container's command line is command[1:] followed by args when the manifest has a command
// (kubeadm's form), or args alone, after the image's entrypoint. cpswap reads and edits the flags
// on it the way the components' own parser (spf13/pflag) reads them: "--name=value" and
// "--name value" (but boolean flags never take the next word), the last occurrence wins, and
// nothing after "--" is a flag.

// listName says which list of the container a token is in.
type listName string

const (
	inCommand listName = "command"
	inArgs    listName = "args"
)

// token is one word of the command line and where it is in the manifest.
type token struct {
	list  listName
	index int
	text  string
}

// parsedFlag is one occurrence of a flag.
type parsedFlag struct {
	Name  string // with its dashes: "--kube-api-qps", "-v"
	Value string
	// tokens holds the flag's word and, for "--name value", the value's word.
	tokens []token
}

// commandLine is a container's flags as the component sees them.
type commandLine struct {
	tokens []token
	flags  []parsedFlag
	// hasCommand: the manifest sets command: (the binary is command[0]).
	hasCommand bool
	binary     string // base name of command[0], "" without a command
}

// booleanFlags of kube-controller-manager and kube-scheduler v1.17.3 (and --version, whose value
// is optional): they never consume the next word, so "--leader-elect false" is leader-elect=true plus a stray word, as the components read
// it. TestBooleanFlagsMatchTheComponents checks this list against the built binaries' --help.
var booleanFlags = map[string]bool{}

func init() {
	for _, name := range strings.Fields(`add-dir-header allocate-node-cidrs alsologtostderr
		authentication-skip-lookup authentication-tolerate-lookup-failure configure-cloud-routes contention-profiling disable-attach-detach-reconcile-sync
		enable-dynamic-provisioning enable-garbage-collector enable-hostpath-provisioner
		enable-taint-manager help leader-elect logtostderr profiling skip-headers skip-log-headers
		use-legacy-policy-config use-service-account-credentials version`) {
		booleanFlags[name] = true
	}
}

// parseCommandLine reads the container's command line.
func parseCommandLine(c *v1.Container) commandLine {
	cl := commandLine{hasCommand: len(c.Command) > 0}
	if cl.hasCommand {
		cl.binary = path.Base(c.Command[0])
		for i, text := range c.Command[1:] {
			cl.tokens = append(cl.tokens, token{inCommand, i + 1, text})
		}
	}
	for i, text := range c.Args {
		cl.tokens = append(cl.tokens, token{inArgs, i, text})
	}
	for i := 0; i < len(cl.tokens); i++ {
		t := cl.tokens[i]
		if t.text == "--" {
			break
		}
		if !strings.HasPrefix(t.text, "-") || t.text == "-" {
			continue // a stray word: pflag collects it as an argument, the components ignore it
		}
		name, value, hasValue := strings.Cut(t.text, "=")
		f := parsedFlag{Name: name, Value: value, tokens: []token{t}}
		if !hasValue {
			bare := strings.TrimLeft(name, "-")
			switch {
			case booleanFlags[bare]:
				f.Value = "true"
			case i+1 < len(cl.tokens) && !strings.HasPrefix(cl.tokens[i+1].text, "-"):
				// pflag takes the next word as the value of a non-boolean flag.
				i++
				f.Value = cl.tokens[i].text
				f.tokens = append(f.tokens, cl.tokens[i])
			default:
				f.Value = ""
			}
		}
		cl.flags = append(cl.flags, f)
	}
	return cl
}

// scalarFlags hold one value, the last occurrence's (list and map flags such as --controllers or
// --feature-gates merge theirs instead).
var scalarFlags = map[string]bool{
	"--leader-elect": true, lockFlag: true, "--leader-elect-resource-name": true, "--leader-elect-resource-namespace": true,
	"--kube-api-qps": true, "--kube-api-burst": true, "--config": true,
}

// count is how often a flag occurs.
func (cl commandLine) count(name string) int {
	n := 0
	for _, f := range cl.flags {
		if f.Name == name {
			n++
		}
	}
	return n
}

// Value returns the effective value of a flag (its last occurrence) and whether it is set.
func (cl commandLine) Value(name string) (string, bool) {
	value, set := "", false
	for _, f := range cl.flags {
		if f.Name == name {
			value, set = f.Value, true
		}
	}
	return value, set
}

// edit is one change to a list of the container: replace the token at index, delete it
// (text == nil), or append (index == -1).
type edit struct {
	list  listName
	index int
	text  *string
}

// setFlag returns the edits that make name=value the flag's only occurrence: the last
// occurrence becomes "--name=value" in place, earlier ones (dead, since the last wins) and a
// separate value word are removed; a flag not set yet is appended to args if the container has
// args, else to command.
func (cl commandLine) setFlag(name, value string) []edit {
	text := name + "=" + value
	var occurrences []parsedFlag
	for _, f := range cl.flags {
		if f.Name == name {
			occurrences = append(occurrences, f)
		}
	}
	if len(occurrences) == 0 {
		list := inArgs
		if cl.hasCommand && !cl.hasArgs() {
			list = inCommand
		}
		return []edit{{list: list, index: -1, text: &text}}
	}
	var edits []edit
	for i, f := range occurrences {
		for j, t := range f.tokens {
			if i == len(occurrences)-1 && j == 0 {
				if t.text != text {
					edits = append(edits, edit{list: t.list, index: t.index, text: &text})
				}
				continue
			}
			edits = append(edits, edit{list: t.list, index: t.index})
		}
	}
	return edits
}

func (cl commandLine) hasArgs() bool {
	for _, t := range cl.tokens {
		if t.list == inArgs {
			return true
		}
	}
	return false
}

// applyEdits applies edits to the container's lists (the typed side of an edit; the manifest's
// bytes get the same edits in yamledit.go).
func applyEdits(c *v1.Container, edits []edit) error {
	lists := map[listName]*[]string{inCommand: &c.Command, inArgs: &c.Args}
	for _, name := range []listName{inCommand, inArgs} {
		list := lists[name]
		var kept []string
		deleted := map[int]bool{}
		replaced := map[int]string{}
		var appended []string
		for _, e := range edits {
			if e.list != name {
				continue
			}
			switch {
			case e.index == -1:
				appended = append(appended, *e.text)
			case e.index < 0 || e.index >= len(*list):
				return fmt.Errorf("internal error: %s[%d] out of range", name, e.index)
			case e.text == nil:
				deleted[e.index] = true
			default:
				replaced[e.index] = *e.text
			}
		}
		for i, text := range *list {
			if deleted[i] {
				continue
			}
			if r, ok := replaced[i]; ok {
				text = r
			}
			kept = append(kept, text)
		}
		kept = append(kept, appended...)
		if len(kept) == 0 && len(*list) == 0 {
			continue
		}
		*list = kept
	}
	return nil
}

// ContainerFlag returns the effective value of a flag on a container's command line (with its
// dashes: "--kube-api-qps"), read as the component reads it, and whether it is set.
func ContainerFlag(c *v1.Container, name string) (string, bool) {
	return parseCommandLine(c).Value(name)
}

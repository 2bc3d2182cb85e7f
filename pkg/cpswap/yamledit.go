package cpswap

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
)

// The manifest is edited in place, line by line, at the positions the YAML node tree gives for
// the container's image and its command/args items. Every other byte (the operator's comments,
// blank lines, quoting, key order) stays as it was. The result is then parsed again and must be
// exactly the Pod the change asks for (see Edit), so an edit this cannot make safely is refused
// rather than guessed.

// containerNodes are the nodes of one container in the manifest.
type containerNodes struct {
	image *yaml.Node
	lists map[listName]*yaml.Node
}

func mappingValue(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// findContainer locates the container named name in the manifest's node tree.
func findContainer(data []byte, name string) (*containerNodes, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("malformed YAML: %v", err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		return nil, fmt.Errorf("the manifest is not a single YAML document")
	}
	containers := mappingValue(mappingValue(doc.Content[0], "spec"), "containers")
	if containers == nil || containers.Kind != yaml.SequenceNode {
		return nil, fmt.Errorf("no spec.containers list")
	}
	for _, c := range containers.Content {
		if n := mappingValue(c, "name"); n != nil && n.Value == name {
			nodes := &containerNodes{image: mappingValue(c, "image"), lists: map[listName]*yaml.Node{}}
			for _, l := range []listName{inCommand, inArgs} {
				nodes.lists[l] = mappingValue(c, string(l))
			}
			return nodes, nil
		}
	}
	return nil, fmt.Errorf("no container %q in the manifest", name)
}

// lineEdit replaces line (0-based) with text, deletes it (text == nil), or inserts text after it.
type lineEdit struct {
	line   int
	text   *string
	insert bool
}

// scalarLine returns the prefix before a block scalar on its line and the comment after it, and
// checks that the scalar is alone on one line, so that the line can be rewritten.
func scalarLine(lines []string, n *yaml.Node) (prefix, suffix string, err error) {
	if n.Kind != yaml.ScalarNode || n.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
		return "", "", fmt.Errorf("line %d: not a one-line scalar", n.Line)
	}
	line := strings.TrimRight(lines[n.Line-1], "\r\n")
	col := n.Column - 1
	if col > len(line) {
		return "", "", fmt.Errorf("line %d: unexpected position", n.Line)
	}
	prefix, rest := line[:col], line[col:]
	var raw string
	switch {
	case n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0:
		end := closingQuote(rest)
		if end < 0 {
			return "", "", fmt.Errorf("line %d: a quoted scalar over several lines", n.Line)
		}
		raw = rest[:end+1]
	default:
		raw = rest
		for i := 1; i < len(raw); i++ { // a comment starts at a '#' after a space or a tab
			if raw[i] == '#' && (raw[i-1] == ' ' || raw[i-1] == '\t') {
				raw = raw[:i]
				break
			}
		}
		raw = strings.TrimRight(raw, " \t")
	}
	// The scalar must read back as the node's value: a plain scalar continued on the next line
	// would not.
	var check string
	if err := yaml.Unmarshal([]byte("v: "+raw), &struct{ V *string }{&check}); err != nil || check != n.Value {
		return "", "", fmt.Errorf("line %d: %q is not the whole value", n.Line, raw)
	}
	return prefix, rest[len(raw):], nil
}

// closingQuote returns the index of the quote that closes the quoted scalar s starts with, or -1.
func closingQuote(s string) int {
	quote := s[0]
	for i := 1; i < len(s); i++ {
		switch {
		case quote == '"' && s[i] == '\\':
			i++
		case s[i] == quote && quote == '\'' && i+1 < len(s) && s[i+1] == '\'':
			i++
		case s[i] == quote:
			return i
		}
	}
	return -1
}

// quoteScalar renders s as a YAML scalar: plain when that reads back as s, else quoted.
func quoteScalar(s string) string {
	out, _ := yaml.Marshal(s)
	return strings.TrimSuffix(string(out), "\n")
}

// quoteLike writes s in the style of the scalar it replaces: double-quoted (as in a JSON
// manifest, which then stays JSON), single-quoted, or as YAML would.
func quoteLike(s string, like *yaml.Node) string {
	switch {
	case like.Style&yaml.DoubleQuotedStyle != 0:
		out, _ := json.Marshal(s) // a JSON string is a YAML double-quoted scalar
		return string(out)
	case like.Style&yaml.SingleQuotedStyle != 0:
		return "'" + strings.ReplaceAll(s, "'", "''") + "'"
	}
	return quoteScalar(s)
}

// editBytes makes the image change and the list edits in data, for the container named name.
func editBytes(data []byte, name, image string, edits []edit) ([]byte, error) {
	nodes, err := findContainer(data, name)
	if err != nil {
		return nil, err
	}
	lines := strings.SplitAfter(string(data), "\n")
	var changes []lineEdit
	if image != "" {
		if nodes.image == nil {
			return nil, fmt.Errorf("container %s has no image: line", name)
		}
		prefix, suffix, err := scalarLine(lines, nodes.image)
		if err != nil {
			return nil, fmt.Errorf("image: %v", err)
		}
		text := prefix + quoteLike(image, nodes.image) + suffix
		changes = append(changes, lineEdit{line: nodes.image.Line - 1, text: &text})
	}
	for _, e := range edits {
		list := nodes.lists[e.list]
		if list == nil || list.Kind != yaml.SequenceNode || list.Style&yaml.FlowStyle != 0 || len(list.Content) == 0 {
			return nil, fmt.Errorf("%s: cpswap edits a non-empty block list (one \"- item\" a line) only; a JSON manifest, or a [a, b] list, has none: write the manifest as YAML in block style (as kubeadm does) first", e.list)
		}
		target := list.Content[len(list.Content)-1]
		if e.index >= 0 {
			target = list.Content[e.index]
		}
		prefix, suffix, err := scalarLine(lines, target)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", e.list, err)
		}
		if strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(prefix), "-")) != "" || !strings.HasSuffix(strings.TrimRight(prefix, " "), "-") {
			return nil, fmt.Errorf("%s: line %d is not a \"- item\" line", e.list, target.Line)
		}
		switch {
		case e.index == -1:
			line := lines[target.Line-1]
			text := prefix + quoteLike(*e.text, target) + line[len(strings.TrimRight(line, "\r\n")):]
			changes = append(changes, lineEdit{line: target.Line - 1, text: &text, insert: true})
		case e.text == nil:
			changes = append(changes, lineEdit{line: target.Line - 1})
		default:
			text := prefix + quoteLike(*e.text, target) + suffix
			changes = append(changes, lineEdit{line: target.Line - 1, text: &text})
		}
	}
	return spliceLines(lines, changes)
}

// spliceLines applies line edits; the replaced lines keep their own line endings.
func spliceLines(lines []string, changes []lineEdit) ([]byte, error) {
	sort.SliceStable(changes, func(i, j int) bool { return changes[i].line < changes[j].line })
	replaced := map[int]*string{} // a nil text deletes the line
	inserted := map[int][]string{}
	for _, c := range changes {
		if c.insert {
			inserted[c.line] = append(inserted[c.line], *c.text)
			continue
		}
		if _, twice := replaced[c.line]; twice {
			return nil, fmt.Errorf("line %d would be changed twice", c.line+1)
		}
		replaced[c.line] = c.text
	}
	var out bytes.Buffer
	for i, line := range lines {
		if text, ok := replaced[i]; !ok {
			out.WriteString(line)
		} else if text != nil {
			out.WriteString(*text + line[len(strings.TrimRight(line, "\r\n")):])
		}
		if more := inserted[i]; len(more) > 0 {
			if !strings.HasSuffix(line, "\n") {
				out.WriteString("\n")
			}
			for _, text := range more {
				out.WriteString(text)
			}
		}
	}
	return out.Bytes(), nil
}

// Package patchmeta is the one definition of a patch's provenance header: the git trailers at the
// end of each patch's message (Upstream-PR:, Category:, ...). It parses a patch file, checks its
// header, renders the message template (hack/patch-message.template) and the release notes, and
// reads fields for the pipeline's scripts (build/cmd/patchmeta).
package patchmeta

import (
	"bufio"
	"bytes"
	"fmt"
	"mime"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// Field is one trailer a patch header may carry.
type Field struct {
	Name string
	// Required fields appear in every header.
	Required bool
	// Repeat fields may appear several times, one value each; the others at most once.
	Repeat bool
	// Form is the value's form as the template shows it; Pattern, when set, checks it.
	Form    string
	Pattern *regexp.Regexp
	// Doc says what the field is for, in the template.
	Doc string
}

var (
	release     = `(none|v[0-9]+\.[0-9]+\.[0-9]+)`
	testPattern = regexp.MustCompile(`^\S+ Test\w*$`)
)

// Fields are the trailers, in the order the template lists them.
var Fields = []Field{
	{Name: "Upstream-PR", Required: true, Repeat: true, Form: "kubernetes/kubernetes#NNNNN, or none",
		Pattern: regexp.MustCompile(`^(none|kubernetes/[a-z-]+#[0-9]+)$`),
		Doc:     "the upstream pull request the patch ports, or none"},
	{Name: "Upstream-Release", Required: true, Form: "vX.Y.Z, or none", Pattern: regexp.MustCompile(`^` + release + `$`),
		Doc: "the first upstream release that shipped the fix (in the 1.17 line when it was picked there), or none"},
	{Name: "Drop-When", Required: true, Form: "vX.Y.Z, or none", Pattern: regexp.MustCompile(`^` + release + `$`),
		Doc: "the first upstream release whose own code makes the whole patch unnecessary (a rebase onto it drops the patch), or none"},
	{Name: "Category", Required: true, Form: strings.Join(Categories, " | "),
		Pattern: regexp.MustCompile(`^(` + strings.Join(Categories, "|") + `)$`),
		Doc:     "what kind of change it is; the release notes group by it"},
	{Name: "Reason", Required: true, Form: "one line",
		Doc: "why we carry it on our base, for the release notes"},
	{Name: "Verified-By", Required: true, Repeat: true, Form: "a test, suite or make target",
		Doc: "what proves the patch works"},
	{Name: "Regression-Test", Form: "test/regression/<suite> TestName", Pattern: testPattern,
		Doc: "a suite's test that make prove-patches requires to fail without the patch"},
	{Name: "Regression-Unit-Test", Repeat: true, Form: "<Go package> TestName", Pattern: testPattern,
		Doc: "a unit test in the patch that make prove-patches requires to fail without it"},
	{Name: "CVE", Repeat: true, Form: "CVE-YYYY-NNNNN", Pattern: regexp.MustCompile(`^CVE-[0-9]{4}-[0-9]{4,}$`),
		Doc: "a vulnerability the patch fixes (a security patch names at least one)"},
	{Name: "Requires", Repeat: true, Form: "NNNN", Pattern: regexp.MustCompile(`^[0-9]{4}$`),
		Doc: "an earlier patch this one cannot apply or build without (proving that patch leaves this one out too)"},
}

// Categories are the values of Category:, in the order the release notes print them.
var Categories = []string{"backport", "security", "fork", "build"}

// FieldNamed returns the field of that name.
func FieldNamed(name string) (Field, bool) {
	for _, f := range Fields {
		if f.Name == name {
			return f, true
		}
	}
	return Field{}, false
}

// Trailer is one "Name: value" line of a header.
type Trailer struct {
	Name, Value string
}

// Patch is a patch file's message: the mail headers git format-patch writes, the body and the
// trailers.
type Patch struct {
	// File is the patch's file name (its base name).
	File string
	// Author is the From: header, "Name <email>".
	Author  string
	Subject string
	// Body is the message between the subject and the trailers.
	Body     string
	Trailers []Trailer
}

var trailerLine = regexp.MustCompile(`^([A-Za-z0-9-]+): (.*)$`)

// Parse reads a git format-patch file (or a message file: a subject line, a blank line, the body
// and the trailers, as hack/new-patch.sh takes).
func Parse(path string) (*Patch, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	p, err := ParseBytes(filepath.Base(path), data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}

// ParseBytes parses the text of a patch or message file named name.
func ParseBytes(name string, data []byte) (*Patch, error) {
	p := &Patch{File: name}
	var lines []string
	scanner := bufio.NewScanner(bytes.NewReader(data))
	scanner.Buffer(make([]byte, 1<<20), 1<<20)
	for scanner.Scan() {
		if scanner.Text() == "---" {
			break
		}
		lines = append(lines, scanner.Text())
	}
	if err := scanner.Err(); err != nil {
		return nil, err
	}
	if len(lines) > 0 && strings.HasPrefix(lines[0], "From ") {
		// Mail headers up to the first blank line; a header continues on lines that start with a space.
		var header string
		i := 1
		flush := func() {
			switch {
			case strings.HasPrefix(header, "From: "):
				// git format-patch writes a non-ASCII name as an RFC 2047 encoded word.
				p.Author = strings.TrimPrefix(header, "From: ")
				if decoded, err := new(mime.WordDecoder).DecodeHeader(p.Author); err == nil {
					p.Author = decoded
				}
			case strings.HasPrefix(header, "Subject: "):
				p.Subject = strings.TrimPrefix(strings.TrimPrefix(header, "Subject: "), "[PATCH] ")
			}
		}
		for ; i < len(lines) && lines[i] != ""; i++ {
			if strings.HasPrefix(lines[i], " ") {
				header += lines[i]
				continue
			}
			flush()
			header = lines[i]
		}
		flush()
		lines = lines[i:]
	} else if len(lines) > 0 {
		p.Subject, lines = lines[0], lines[1:]
	}
	// The trailers are the last paragraph, when every line of it is "Name: value".
	for len(lines) > 0 && strings.TrimSpace(lines[len(lines)-1]) == "" {
		lines = lines[:len(lines)-1]
	}
	start := len(lines)
	for start > 0 && lines[start-1] != "" {
		start--
	}
	var trailers []Trailer
	for _, line := range lines[start:] {
		m := trailerLine.FindStringSubmatch(line)
		if m == nil {
			trailers = nil
			start = len(lines)
			break
		}
		trailers = append(trailers, Trailer{Name: m[1], Value: strings.TrimSpace(m[2])})
	}
	p.Trailers = trailers
	p.Body = strings.TrimSpace(strings.Join(lines[:start], "\n"))
	if p.Subject == "" {
		return nil, fmt.Errorf("no subject")
	}
	return p, nil
}

// Values returns every value of a field, in order.
func (p *Patch) Values(name string) []string {
	var values []string
	for _, t := range p.Trailers {
		if t.Name == name {
			values = append(values, t.Value)
		}
	}
	return values
}

// Value returns a field's value ("" when absent).
func (p *Patch) Value(name string) string {
	if v := p.Values(name); len(v) > 0 {
		return v[0]
	}
	return ""
}

// Ported lists the upstream pull requests the patch ports (none for a change of our own).
func (p *Patch) Ported() []string {
	var prs []string
	for _, pr := range p.Values("Upstream-PR") {
		if pr != "none" {
			prs = append(prs, pr)
		}
	}
	return prs
}

// Number is the patch's number in the series, from its file name ("0004-...").
func (p *Patch) Number() string {
	if n, _, ok := strings.Cut(p.File, "-"); ok {
		return n
	}
	return ""
}

// Problems lists what is wrong with the header, one line each, every line starting with the
// patch's file name. pipelineAuthor is the pipeline's own identity ("Name <email>"), which a
// patch that ports an upstream PR must not name as its author.
func (p *Patch) Problems(pipelineAuthor string) []string {
	var problems []string
	add := func(format string, args ...interface{}) {
		problems = append(problems, p.File+": "+fmt.Sprintf(format, args...))
	}
	if len(p.Trailers) == 0 {
		add("the message ends without trailers (Name: value lines after a blank line)")
	}
	for _, t := range p.Trailers {
		if _, ok := FieldNamed(t.Name); !ok {
			add("unknown field %s: (known: %s)", t.Name, strings.Join(fieldNames(), ", "))
		}
	}
	for _, f := range Fields {
		values := p.Values(f.Name)
		switch {
		case len(values) == 0 && f.Required:
			add("header has no %s: field", f.Name)
		case len(values) > 1 && !f.Repeat:
			add("%s: appears %d times; it takes one value (remarks go in the body)", f.Name, len(values))
		}
		for _, v := range values {
			if f.Pattern != nil && !f.Pattern.MatchString(v) {
				add("%s: %q is not of the form %s (remarks go in the body)", f.Name, v, f.Form)
			}
		}
	}
	category, prs, ported := p.Value("Category"), p.Values("Upstream-PR"), p.Ported()
	ports := len(ported) > 0
	switch {
	case category == "backport" && !ports:
		add("Category: backport needs an Upstream-PR:")
	case category == "fork" && ports:
		add("Category: fork is ours alone, but Upstream-PR: names %s", ported[0])
	case category == "security" && len(p.Values("CVE")) == 0:
		add("Category: security needs a CVE: field")
	}
	if len(prs) > 1 && contains(prs, "none") {
		add("Upstream-PR: none among pull requests")
	}
	if ports && p.Author == pipelineAuthor && pipelineAuthor != "" {
		add("From: %s is the pipeline; a patch that ports %s keeps its upstream author (the pipeline stays the committer)", p.Author, ported[0])
	}
	return problems
}

func fieldNames() []string {
	var names []string
	for _, f := range Fields {
		names = append(names, f.Name)
	}
	return names
}

func contains(values []string, want string) bool {
	for _, v := range values {
		if v == want {
			return true
		}
	}
	return false
}

// Template is hack/patch-message.template: what a message file looks like, made from Fields.
func Template() string {
	var b strings.Builder
	b.WriteString(`area: one-line summary in the imperative

What the patch changes and why, in a few sentences. Name the incident or bug it fixes and how the
change differs from upstream's, if it is a backport; remarks about the fields below go here too.
A backport keeps the upstream author: hack/new-patch.sh --author "Name <email>" MESSAGE_FILE.

# One value per line; repeat a field marked (repeatable). Delete the optional fields you do not
# use and these comment lines (hack/new-patch.sh strips lines starting with #).
`)
	for _, f := range Fields {
		var notes []string
		if !f.Required {
			notes = append(notes, "optional")
		}
		if f.Repeat {
			notes = append(notes, "repeatable")
		}
		note := ""
		if len(notes) > 0 {
			note = " (" + strings.Join(notes, ", ") + ")"
		}
		fmt.Fprintf(&b, "# %s%s: %s\n", f.Name, note, f.Doc)
	}
	b.WriteString("\n")
	for _, f := range Fields {
		fmt.Fprintf(&b, "%s: %s\n", f.Name, f.Form)
	}
	return b.String()
}

// ReadSeries returns the patch file names patches/series lists, in order, without comments or
// blank lines.
func ReadSeries(path string) ([]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, line := range strings.Split(string(data), "\n") {
		line, _, _ = strings.Cut(line, "#")
		if line = strings.TrimSpace(line); line != "" {
			names = append(names, line)
		}
	}
	return names, nil
}

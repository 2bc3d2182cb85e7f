// Package triage checks patches/UPSTREAM.md, the written decision on every change upstream
// shipped in 1.17 patch releases after our base, against upstream's own CHANGELOG-1.17.md: every
// changelog entry has exactly one row, every row an entry, and every decision is one of a few
// words that the series backs (a "carried NNNN" patch exists and names the upstream PR).
package triage

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// Entry is one bullet of a release's notes.
type Entry struct {
	Release string // "v1.17.12"
	PR      string // the first kubernetes/kubernetes pull request the bullet links, "93722"
	Text    string // the bullet's first line, for messages
}

var (
	releaseHeading = regexp.MustCompile(`^# (v\d+\.\d+\.\d+)\s*$`)
	anyRelease     = regexp.MustCompile(`^# v\d`)
	bullet         = regexp.MustCompile(`^ ?[-*] (.*)$`)
	pullLink       = regexp.MustCompile(`github\.com/kubernetes/kubernetes/pull/(\d+)`)
	// attribution is the "([#N](.../pull/N), [@author](...))" that ends an entry; its pull request
	// keys the entry even when the text links another one first.
	attribution = regexp.MustCompile(`\(\[#\d+\]\(https://github\.com/kubernetes/kubernetes/pull/(\d+)\)`)
)

// entryPR is the pull request that keys an entry: the attribution's, else the first one linked.
func entryPR(text string) string {
	if m := attribution.FindStringSubmatch(text); m != nil {
		return m[1]
	}
	if m := pullLink.FindStringSubmatch(text); m != nil {
		return m[1]
	}
	return ""
}

// ParseChangelog returns the entries of releases v<minor>.<first> to v<minor>.<last> of a
// Kubernetes CHANGELOG-<minor>.md: every top-level bullet of a release's notes, outside its
// Downloads and Dependencies sections (module lists, not changes).
func ParseChangelog(text, minor string, first, last int) ([]Entry, error) {
	wanted := map[string]bool{}
	for n := first; n <= last; n++ {
		wanted[fmt.Sprintf("v%s.%d", minor, n)] = true
	}
	var entries []Entry
	seen := map[string]bool{}
	release, section := "", ""
	var current *Entry
	var body strings.Builder
	flush := func() {
		if current != nil {
			current.PR = entryPR(body.String())
			entries = append(entries, *current)
			current = nil
		}
	}
	for _, line := range strings.Split(text, "\n") {
		if anyRelease.MatchString(line) {
			flush()
			release = ""
			if m := releaseHeading.FindStringSubmatch(line); m != nil && wanted[m[1]] && !seen[m[1]] {
				release, section = m[1], ""
				seen[release] = true
			}
			continue
		}
		if release == "" {
			continue
		}
		if strings.HasPrefix(line, "#") {
			flush()
			heading := strings.TrimSpace(strings.TrimLeft(line, "#"))
			if strings.HasPrefix(line, "## ") || strings.HasPrefix(line, "# ") {
				section = heading
			}
			continue
		}
		if strings.HasPrefix(section, "Downloads") || strings.HasPrefix(section, "Dependencies") {
			continue
		}
		if m := bullet.FindStringSubmatch(line); m != nil {
			flush()
			current = &Entry{Release: release, Text: strings.TrimSpace(m[1])}
			body.Reset()
			body.WriteString(line)
			continue
		}
		if current != nil {
			body.WriteString("\n" + line)
		}
	}
	flush()
	var missing []string
	for r := range wanted {
		if !seen[r] {
			missing = append(missing, r)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return nil, fmt.Errorf("the changelog has no notes for %s", strings.Join(missing, ", "))
	}
	for _, e := range entries {
		if e.PR == "" {
			return nil, fmt.Errorf("%s: an entry links no pull request, so it cannot be keyed: %q", e.Release, e.Text)
		}
	}
	return entries, nil
}

// Row is one decision in the record.
type Row struct {
	Line     int
	Release  string
	PR       string
	Decision string
	Symptom  string
	Reason   string
}

// Record is patches/UPSTREAM.md: the rows for the changelog's entries, and the rows for fixes
// upstream shipped later or without a changelog entry, which need a decision too.
type Record struct {
	Changelog []Row
	Later     []Row
}

// The record's two tables are found under these headings.
const (
	ChangelogHeading = "## Changelog entries"
	LaterHeading     = "## Later fixes"
)

var prCell = regexp.MustCompile(`^#(\d+)$`)

// ParseRecord reads the record's tables. Changelog rows are | release | #PR | decision | symptom |
// reason |; later rows are | #PR | first release | decision | symptom | reason |.
func ParseRecord(text string) (*Record, error) {
	rec := &Record{}
	var table *[]Row
	later := false
	for i, line := range strings.Split(text, "\n") {
		switch {
		case strings.HasPrefix(line, ChangelogHeading):
			table, later = &rec.Changelog, false
			continue
		case strings.HasPrefix(line, LaterHeading):
			table, later = &rec.Later, true
			continue
		case strings.HasPrefix(line, "## "):
			table = nil
			continue
		}
		if table == nil || !strings.HasPrefix(line, "|") || strings.HasPrefix(line, "|---") || strings.HasPrefix(line, "| release") || strings.HasPrefix(line, "| PR") {
			continue
		}
		cells := strings.Split(strings.Trim(strings.TrimSpace(line), "|"), "|")
		if len(cells) != 5 {
			return nil, fmt.Errorf("UPSTREAM.md line %d: want 5 cells, got %d", i+1, len(cells))
		}
		for j := range cells {
			cells[j] = strings.TrimSpace(cells[j])
		}
		row := Row{Line: i + 1, Release: cells[0], PR: cells[1], Decision: cells[2], Symptom: cells[3], Reason: cells[4]}
		if later {
			row.PR, row.Release = cells[0], cells[1]
		}
		m := prCell.FindStringSubmatch(row.PR)
		if m == nil {
			return nil, fmt.Errorf("UPSTREAM.md line %d: PR cell %q is not #NNNNN", i+1, row.PR)
		}
		row.PR = m[1]
		*table = append(*table, row)
	}
	if len(rec.Changelog) == 0 {
		return nil, fmt.Errorf("UPSTREAM.md has no rows under %q", ChangelogHeading)
	}
	return rec, nil
}

var decision = regexp.MustCompile(`^(?:(carried|covered) (\d{4})|not needed|declined|out of scope)$`)

// Decisions lists the words a row may decide, for messages and the record's header.
const Decisions = `"carried NNNN", "covered NNNN", "not needed", "declined", "out of scope"`

// Check returns one line per problem: entries without a row, rows without an entry, duplicate
// rows, later fixes that are changelog entries, unknown decisions, rows without a reason, and
// "carried"/"covered" rows whose patch is not in the series (patches maps "0012" to the patch
// file's text), "carried" rows whose patch does not name the PR, and "covered" rows whose patch
// ports that very PR (its Upstream-PR field): that patch carries it.
func Check(entries []Entry, rec *Record, patches map[string]string) []string {
	var problems []string
	key := func(release, pr string) string { return release + " #" + pr }
	rows := map[string]Row{}
	for _, r := range rec.Changelog {
		k := key(r.Release, r.PR)
		if prev, dup := rows[k]; dup {
			problems = append(problems, fmt.Sprintf("line %d: %s has a row already (line %d)", r.Line, k, prev.Line))
		}
		rows[k] = r
	}
	inChangelog := map[string]bool{}
	for _, e := range entries {
		k := key(e.Release, e.PR)
		inChangelog[k] = true
		if _, ok := rows[k]; !ok {
			problems = append(problems, fmt.Sprintf("%s has no row: %q", k, e.Text))
		}
	}
	for _, r := range rec.Changelog {
		if !inChangelog[key(r.Release, r.PR)] {
			problems = append(problems, fmt.Sprintf("line %d: %s is not an entry of upstream's changelog", r.Line, key(r.Release, r.PR)))
		}
	}
	changelogPRs := map[string]int{}
	for _, r := range rec.Changelog {
		changelogPRs[r.PR] = r.Line
	}
	for _, r := range rec.Later {
		if line, ok := changelogPRs[r.PR]; ok {
			problems = append(problems, fmt.Sprintf("line %d: #%s is a changelog entry (line %d), not a later fix", r.Line, r.PR, line))
		}
	}
	for _, r := range append(append([]Row{}, rec.Changelog...), rec.Later...) {
		where := fmt.Sprintf("line %d (#%s)", r.Line, r.PR)
		m := decision.FindStringSubmatch(r.Decision)
		switch {
		case m == nil:
			problems = append(problems, fmt.Sprintf("%s: decision %q is not one of %s", where, r.Decision, Decisions))
			continue
		case r.Reason == "" || r.Symptom == "":
			problems = append(problems, fmt.Sprintf("%s: %s needs a symptom and a reason", where, r.Decision))
		}
		if m[2] == "" {
			continue
		}
		text, ok := patches[m[2]]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("%s: %s, but the series has no patch %s", where, r.Decision, m[2]))
		case m[1] == "carried" && !regexp.MustCompile(`\b`+r.PR+`\b`).MatchString(text):
			problems = append(problems, fmt.Sprintf("%s: carried %s, but that patch does not name #%s", where, m[2], r.PR))
		case m[1] == "covered" && regexp.MustCompile(`(?m)^Upstream-PR: .*#`+r.PR+`\b`).MatchString(text):
			problems = append(problems, fmt.Sprintf("%s: covered %s, but that patch ports #%s (its Upstream-PR): say carried %s", where, m[2], r.PR, m[2]))
		}
	}
	return problems
}

// Summary counts the decisions of the changelog's rows.
func Summary(rec *Record) string {
	counts := map[string]int{}
	for _, r := range rec.Changelog {
		counts[strings.Fields(r.Decision)[0]]++
	}
	return fmt.Sprintf("%d changelog entries: %d carried, %d covered, %d not needed, %d declined, %d out of scope; %d later fixes decided",
		len(rec.Changelog), counts["carried"], counts["covered"], counts["not"], counts["declined"], counts["out"], len(rec.Later))
}

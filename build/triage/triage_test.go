package triage

import (
	"strings"
	"testing"
)

// changelog has the shapes upstream's CHANGELOG-1.17.md uses: a release heading, "Changes by
// Kind" sections, an attribution link after a text link, a multi-line bullet, a Dependencies
// section (modules, not changes), and a release outside the range.
const changelog = `# v1.17.6

## Downloads for v1.17.6

- [kubernetes.tar.gz](https://dl.k8s.io/v1.17.6/kubernetes.tar.gz)

## Changelog since v1.17.5

## Changes by Kind

### Bug or Regression

- Fix a thing ([#90414](https://github.com/kubernetes/kubernetes/pull/90414), [@a](https://github.com/a)) [SIG Scheduling]
- Fixes a conformance failure [#87933](https://github.com/kubernetes/kubernetes/pull/87933) ([#88586](https://github.com/kubernetes/kubernetes/pull/88586), [@b](https://github.com/b)) [SIG Node]
- A bullet that wraps
  onto a second line ([#90032](https://github.com/kubernetes/kubernetes/pull/90032), [@c](https://github.com/c))

## Dependencies

### Changed
- k8s.io/kube-openapi: 82d701f → bcb3869

# v1.17.5

### Other (Cleanup or Readability)

- Build with go1.13.8 ([#89399](https://github.com/kubernetes/kubernetes/pull/89399), [@d](https://github.com/d))

# v1.17.4

- Outside the range ([#1](https://github.com/kubernetes/kubernetes/pull/1), [@e](https://github.com/e))
`

const record = `# header

## Changelog entries, v1.17.5 to v1.17.6

| release | PR | decision | symptom | reason |
|---|---|---|---|---|
| v1.17.6 | #90414 | carried 0015 | nodes overpacked | scheduler counts init containers |
| v1.17.6 | #88586 | out of scope | conformance | kubelet only |
| v1.17.6 | #90032 | not needed | managedFields wiped | apiserver strategies only |
| v1.17.5 | #89399 | covered 0002 | old Go | our toolchain |

## Later fixes (not in the 1.17 changelog), ranked

| PR | first release | decision | symptom | reason |
|---|---|---|---|---|
| #92743 | v1.20.0 | declined | GC uid races | too big |
`

var patches = map[string]string{"0002": "build: ...", "0015": "Upstream-PR: kubernetes/kubernetes#90414\n"}

func parse(t *testing.T, rec string) ([]Entry, *Record) {
	t.Helper()
	entries, err := ParseChangelog(changelog, "1.17", 5, 6)
	if err != nil {
		t.Fatal(err)
	}
	r, err := ParseRecord(rec)
	if err != nil {
		t.Fatal(err)
	}
	return entries, r
}

func TestParseChangelogKeysEveryEntry(t *testing.T) {
	entries, _ := parse(t, record)
	var got []string
	for _, e := range entries {
		got = append(got, e.Release+" #"+e.PR)
	}
	want := "v1.17.6 #90414|v1.17.6 #88586|v1.17.6 #90032|v1.17.5 #89399"
	if strings.Join(got, "|") != want {
		t.Errorf("entries %q, want %q", got, want)
	}
	if _, err := ParseChangelog(changelog, "1.17", 5, 7); err == nil || !strings.Contains(err.Error(), "no notes for v1.17.7") {
		t.Errorf("a missing release: %v", err)
	}
}

func TestCheck(t *testing.T) {
	tests := []struct {
		name      string
		edit      func(string) string
		wantError string
	}{
		{name: "complete", edit: func(s string) string { return s }},
		{
			name: "a deleted row",
			edit: func(s string) string {
				return strings.Replace(s, "| v1.17.6 | #90032 | not needed | managedFields wiped | apiserver strategies only |\n", "", 1)
			},
			wantError: `v1.17.6 #90032 has no row: "A bullet that wraps"`,
		},
		{
			name:      "a row for no entry",
			edit:      func(s string) string { return strings.Replace(s, "| v1.17.6 | #88586 |", "| v1.17.6 | #87933 |", 1) },
			wantError: "v1.17.6 #87933 is not an entry of upstream's changelog",
		},
		{
			name:      "an unknown decision",
			edit:      func(s string) string { return strings.Replace(s, "| not needed |", "| maybe later |", 1) },
			wantError: `decision "maybe later" is not one of`,
		},
		{
			name:      "no reason",
			edit:      func(s string) string { return strings.Replace(s, "| apiserver strategies only |", "|  |", 1) },
			wantError: "not needed needs a symptom and a reason",
		},
		{
			name:      "carried by a patch that is not in the series",
			edit:      func(s string) string { return strings.Replace(s, "carried 0015", "carried 0016", 1) },
			wantError: "the series has no patch 0016",
		},
		{
			name:      "carried by a patch that does not name the PR",
			edit:      func(s string) string { return strings.Replace(s, "covered 0002", "carried 0002", 1) },
			wantError: "carried 0002, but that patch does not name #89399",
		},
		{
			name:      "covered by the patch that ports the PR",
			edit:      func(s string) string { return strings.Replace(s, "carried 0015", "covered 0015", 1) },
			wantError: "covered 0015, but that patch ports #90414 (its Upstream-PR): say carried 0015",
		},
		{
			name:      "a changelog entry among the later fixes",
			edit:      func(s string) string { return strings.Replace(s, "| #92743 | v1.20.0 |", "| #88586 | v1.17.6 |", 1) },
			wantError: "#88586 is a changelog entry (line 8), not a later fix",
		},
		{
			name:      "a duplicate row",
			edit:      func(s string) string { return strings.Replace(s, "| v1.17.5 | #89399 |", "| v1.17.6 | #90414 |", 1) },
			wantError: "v1.17.6 #90414 has a row already",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			entries, rec := parse(t, tc.edit(record))
			problems := strings.Join(Check(entries, rec, patches), "\n")
			if tc.wantError == "" && problems != "" {
				t.Errorf("problems in a complete record:\n%s", problems)
			}
			if tc.wantError != "" && !strings.Contains(problems, tc.wantError) {
				t.Errorf("problems:\n%s\nwant one containing %q", problems, tc.wantError)
			}
		})
	}
}

package patchmeta

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const pipeline = "idc-lts pipeline <pipeline@idc-lts.invalid>"

// TestTemplateIsGeneratedFromTheFields keeps hack/patch-message.template from drifting from the
// checks: it must be exactly what Template makes of Fields.
func TestTemplateIsGeneratedFromTheFields(t *testing.T) {
	path := filepath.Join("..", "..", "hack", "patch-message.template")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != Template() {
		t.Errorf("hack/patch-message.template differs from the fields in build/patchmeta: run 'go run ./build/cmd/patchmeta template > hack/patch-message.template'")
	}
	for _, f := range Fields {
		if !strings.Contains(string(data), "\n"+f.Name+": ") {
			t.Errorf("the template lacks field %s", f.Name)
		}
	}
}

func patchText(author string, trailers ...string) string {
	return "From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\n" +
		"From: " + author + "\nDate: Mon, 23 Nov 2026 15:53:14 +0000\n" +
		"Subject: [PATCH] endpoints: a summary that git folds\n onto a second line\n\n" +
		"The body.\n\nIts second paragraph.\n\n" + strings.Join(trailers, "\n") + "\n---\n a/file | 1 +\n"
}

var backport = []string{
	"Upstream-PR: kubernetes/kubernetes#94112",
	"Upstream-PR: kubernetes/kubernetes#108078",
	"Upstream-Release: v1.17.13",
	"Drop-When: v1.24.0",
	"Category: backport",
	"Reason: resyncs rewrote every headless Endpoints",
	"Verified-By: test/regression/headless",
	"Verified-By: unit test TestEndpointsUpToDate",
	"Regression-Test: test/regression/headless TestPatchedLeavesUnchangedEndpointsAlone",
}

func replace(trailers []string, prefix string, with ...string) []string {
	var out []string
	for _, t := range trailers {
		if strings.HasPrefix(t, prefix) {
			out = append(out, with...)
			with = nil
			continue
		}
		out = append(out, t)
	}
	return out
}

func TestProblems(t *testing.T) {
	const author = "Jane Doe <jane@example.com>"
	const file = "0004-endpoints.patch"
	tests := []struct {
		name     string
		author   string
		trailers []string
		want     []string // substrings of the problems, in order; none for a good header
	}{
		{"a good backport", author, backport, nil},
		{"a missing required field", author, replace(backport, "Reason:"), []string{file + ": header has no Reason: field"}},
		{"a remark in a single-valued field", author, replace(backport, "Upstream-Release:", "Upstream-Release: v1.17.13 (94112; 108078 in v1.24.0)"),
			[]string{`Upstream-Release: "v1.17.13 (94112; 108078 in v1.24.0)" is not of the form vX.Y.Z, or none`}},
		{"two values in one line", author, replace(backport, "Upstream-PR: kubernetes/kubernetes#94112", "Upstream-PR: kubernetes/kubernetes#94112, kubernetes/kubernetes#1"),
			[]string{`Upstream-PR: "kubernetes/kubernetes#94112, kubernetes/kubernetes#1" is not of the form`}},
		{"a single-valued field twice", author, append(append([]string{}, backport...), "Drop-When: v1.25.0"),
			[]string{"Drop-When: appears 2 times; it takes one value"}},
		{"an unknown field", author, append(append([]string{}, backport...), "Signed-off-by: someone"),
			[]string{"unknown field Signed-off-by:"}},
		{"a backport by the pipeline", pipeline, backport,
			[]string{"From: " + pipeline + " is the pipeline; a patch that ports kubernetes/kubernetes#94112 keeps its upstream author"}},
		{"a backport without a PR", author, replace(backport, "Upstream-PR: kubernetes/kubernetes#94112", "Upstream-PR: none"),
			[]string{"Upstream-PR: none among pull requests"}},
		{"a fork naming a PR", pipeline, replace(backport, "Category:", "Category: fork"),
			[]string{"Category: fork is ours alone, but Upstream-PR: names kubernetes/kubernetes#94112", "is the pipeline"}},
		{"a security fix without a CVE", author, replace(backport, "Category:", "Category: security"),
			[]string{"Category: security needs a CVE: field"}},
		{"an unknown category", author, replace(backport, "Category:", "Category: feature"),
			[]string{`Category: "feature" is not of the form backport | security | fork | build`}},
		{"no trailers at all", author, []string{"Just prose."},
			[]string{"the message ends without trailers", "header has no Upstream-PR: field"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := ParseBytes(file, []byte(patchText(tt.author, tt.trailers...)))
			if err != nil {
				t.Fatal(err)
			}
			got := p.Problems(pipeline)
			if len(tt.want) == 0 && len(got) > 0 {
				t.Fatalf("problems %q, want none", got)
			}
			joined := strings.Join(got, "\n")
			for _, want := range tt.want {
				if !strings.Contains(joined, want) {
					t.Errorf("problems\n%s\nlack %q", joined, want)
				}
			}
			for _, line := range got {
				if !strings.HasPrefix(line, file+": ") {
					t.Errorf("problem %q does not start with the patch's name", line)
				}
			}
		})
	}
}

func TestParse(t *testing.T) {
	p, err := ParseBytes("0004-x.patch", []byte(patchText("Jane Doe <jane@example.com>", backport...)))
	if err != nil {
		t.Fatal(err)
	}
	if p.Subject != "endpoints: a summary that git folds onto a second line" {
		t.Errorf("subject %q", p.Subject)
	}
	if p.Body != "The body.\n\nIts second paragraph." {
		t.Errorf("body %q", p.Body)
	}
	if got := p.Values("Upstream-PR"); len(got) != 2 || got[1] != "kubernetes/kubernetes#108078" {
		t.Errorf("Upstream-PR values %q", got)
	}
	if p.Author != "Jane Doe <jane@example.com>" || p.Number() != "0004" {
		t.Errorf("author %q, number %q", p.Author, p.Number())
	}
}

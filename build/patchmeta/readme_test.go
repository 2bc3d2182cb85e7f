package patchmeta

import (
	"strings"
	"testing"
)

func TestWriteReadmeTable(t *testing.T) {
	patch := func(name, trailers string) *Patch {
		p, err := ParseBytes(name, []byte("Subject: [PATCH] area: a fix\n\nWhy.\n\n"+trailers))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	series := []*Patch{
		patch("0001-build.patch", "Category: build\nReason: it builds\n"),
		patch("0004-ported.patch", "Upstream-PR: kubernetes/kubernetes#94112\nUpstream-PR: kubernetes/kubernetes#108078\nUpstream-Release: v1.17.13\nCategory: backport\nReason: resyncs rewrote | everything\nRegression-Test: test/regression/headless TestPatchedX\nRegression-Unit-Test: k8s.io/kubernetes/pkg/controller/endpoint TestY\n"),
		patch("0031-ours.patch", "Upstream-PR: none\nUpstream-Release: none\nCategory: fork\nReason: a standby held every pod twice\nVerified-By: unit test TestZ\nVerified-By: make bench\n"),
	}
	var b strings.Builder
	if err := WriteReadmeTable(&b, series); err != nil {
		t.Fatal(err)
	}
	want := "| patch | why we carry it | upstream | proof |\n|---|---|---|---|\n" +
		"| 0004 | resyncs rewrote \\| everything | #94112, #108078 (v1.17.13) | `test/regression/headless` `TestPatchedX`; unit test `TestY` |\n" +
		"| 0031 | a standby held every pod twice | ours | unit test TestZ |\n"
	if b.String() != want {
		t.Errorf("table:\n%s\nwant:\n%s", b.String(), want)
	}
}

package conformance

import (
	"fmt"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// absentOnPurpose are the images conformance tests of v1.17.3 name so that their pull fails
// (../shared/conformance-map.md, section 1.1): offline, it fails at once, as they intend.
var absentOnPurpose = map[string]bool{
	"foo:non-existent": true, // apps/daemon_set.go
	"webserver:404":    true, // apps/deployment.go
	"gcr.io/google_samples/gb-redisslave:nonexistent": true, // apps/deployment.go
	"webhook-added-image":                             true, // agnhost's mutating webhook
	"nginx":                                           true, // 0-replica templates, resource_quota.go
}

// pulling is the kubelet's event of a pull it starts (an image it does not have), as its log
// records it (the struct dump escapes the quotes).
var pulling = regexp.MustCompile(`Pulling image \\?"([^"\\]+)`)

// unexpectedPulls returns the images the kubelet tried to pull, by the lines of its log that
// record a pull, except those absent on purpose and those of the release under test: each is an
// image the run is missing, and the test that asked for it failed for that, not for what it
// tests.
func unexpectedPulls(lines []string, ours *ourRelease) []string {
	expected := map[string]bool{}
	if ours != nil {
		for _, image := range ours.images {
			expected[image] = true
		}
	}
	seen := map[string]int{}
	for _, line := range lines {
		for _, m := range pulling.FindAllStringSubmatch(line, -1) {
			image := strings.TrimSuffix(m[1], ":latest")
			if !absentOnPurpose[image] && !expected[m[1]] {
				seen[m[1]]++
			}
		}
	}
	var pulls []string
	for image, n := range seen {
		pulls = append(pulls, fmt.Sprintf("%s (%d times)", image, n))
	}
	sort.Strings(pulls)
	return pulls
}

func TestUnexpectedPulls(t *testing.T) {
	ours := &ourRelease{images: map[string]string{"kube-scheduler": "127.0.0.1:5000/idc-lts/kube-scheduler:v1@sha256:abc"}}
	lines := []string{
		`I1126 07:31:02 event.go:281] Event(v1.ObjectReference{...}): type: 'Normal' reason: 'Pulling' Pulling image "webserver:404"`,
		`I1126 07:31:03 server.go:1] Event(v1.ObjectReference{Kind:"Pod"}, Message:"Pulling image \"webhook-added-image\"", Source:...`,
		`I1126 07:31:04 event.go:281] reason: 'Pulling' Pulling image "127.0.0.1:5000/idc-lts/kube-scheduler:v1@sha256:abc"`,
		`I1126 07:31:05 event.go:281] reason: 'Pulling' Pulling image "docker.io/library/redis:5.0.5-alpine"`,
		`I1126 07:31:06 event.go:281] reason: 'Pulling' Pulling image "docker.io/library/redis:5.0.5-alpine"`,
		`I1126 07:31:07 kuberuntime_image.go:1] Container image "docker.io/library/busybox:1.29" already present on machine`,
	}
	want := []string{"docker.io/library/redis:5.0.5-alpine (2 times)"}
	if got := unexpectedPulls(lines, ours); !reflect.DeepEqual(got, want) {
		t.Errorf("unexpectedPulls = %q, want %q", got, want)
	}
	if got := unexpectedPulls(lines[:2], nil); len(got) != 0 {
		t.Errorf("pulls absent on purpose reported: %q", got)
	}
}

package report

import (
	"fmt"
	"os"
	"strings"

	"github.com/idc-lts/kube-1.17/build/docblock"
	"github.com/idc-lts/kube-1.17/test/bench/summary"
)

// The README's headline is docs/benchmarks.md's summary, copied between summary.HeadlineStart
// and summary.HeadlineEnd by make bench; make lint (build/cmd/figures) names a word that differs.
const (
	HeadlineStart = summary.HeadlineStart
	HeadlineEnd   = summary.HeadlineEnd
)

// Headline returns a benchmarks page's summary (summary.Lines).
func Headline(page string) ([]string, error) {
	data, err := os.ReadFile(page)
	if err != nil {
		return nil, err
	}
	lines := summary.Lines(string(data))
	if len(lines) == 0 {
		return nil, fmt.Errorf("%s has no summary (lines beginning \"- **\" before \"- Machine:\")", page)
	}
	return lines, nil
}

// CopyHeadline replaces what stands between the headline markers of readme with page's summary.
func CopyHeadline(readme, page string) error {
	lines, err := Headline(page)
	if err != nil {
		return err
	}
	data, err := os.ReadFile(readme)
	if err != nil {
		return err
	}
	updated, ok := docblock.Set(string(data), HeadlineStart, HeadlineEnd, strings.Join(lines, "\n")+"\n")
	if !ok {
		return fmt.Errorf("%s has no headline block (%q ... %q)", readme, HeadlineStart, HeadlineEnd)
	}
	return os.WriteFile(readme, []byte(updated), 0o644)
}

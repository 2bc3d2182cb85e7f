package report

import (
	"fmt"
	"os"
	"strings"
)

// The README's headline is docs/benchmarks.md's summary (the page's first list of "- **"
// bullets), copied between these markers by make bench; make lint (build/verify-docs.sh) fails
// when the two differ, naming the words that do.
const (
	HeadlineStart = "<!-- headline: docs/benchmarks.md's summary, copied by make bench; make lint checks the copy -->"
	HeadlineEnd   = "<!-- /headline -->"
)

// Headline returns a benchmarks page's summary: its first run of lines that begin "- **".
func Headline(page string) ([]string, error) {
	data, err := os.ReadFile(page)
	if err != nil {
		return nil, err
	}
	var lines []string
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "- **") {
			lines = append(lines, line)
		} else if len(lines) > 0 {
			break
		}
	}
	if len(lines) == 0 {
		return nil, fmt.Errorf("%s has no summary (lines beginning \"- **\")", page)
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
	text := string(data)
	start, end := strings.Index(text, HeadlineStart+"\n"), strings.Index(text, HeadlineEnd)
	if start < 0 || end < start {
		return fmt.Errorf("%s has no headline block (%q ... %q)", readme, HeadlineStart, HeadlineEnd)
	}
	start += len(HeadlineStart) + 1
	updated := text[:start] + strings.Join(lines, "\n") + "\n" + text[end:]
	return os.WriteFile(readme, []byte(updated), 0o644)
}

package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCopyHeadlineReplacesTheREADMEsBlock(t *testing.T) {
	dir := t.TempDir()
	page, readme := filepath.Join(dir, "benchmarks.md"), filepath.Join(dir, "README.md")
	write := func(path, text string) {
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(page, "# Benchmark\n\nIntro.\n\n- **Resync.** 89 ms.\n- **Failover.** 15.1 s.\n\n- Machine: x\n")
	write(readme, "# Title\n\n**Headline**:\n"+HeadlineStart+"\n- **Resync.** 777 ms.\n"+HeadlineEnd+"\n\n## Next\n")
	if err := CopyHeadline(readme, page); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(readme)
	want := "# Title\n\n**Headline**:\n" + HeadlineStart + "\n- **Resync.** 89 ms.\n- **Failover.** 15.1 s.\n" + HeadlineEnd + "\n\n## Next\n"
	if string(got) != want {
		t.Errorf("README after the copy:\n%s\nwant:\n%s", got, want)
	}
	write(readme, "# Title without a block\n")
	if err := CopyHeadline(readme, page); err == nil || !strings.Contains(err.Error(), "no headline block") {
		t.Errorf("a README without the markers: %v, want an error naming them", err)
	}
}

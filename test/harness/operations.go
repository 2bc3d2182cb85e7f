package harness

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// OperatorBlocks are docs/operations.md's blocks to paste, in order (before, apply, rollback):
// each from a line "   (" to a line "   )", unindented, as make lint (build/verify-docs.sh)
// shellchecks them.
func OperatorBlocks(t testing.TB) []string {
	doc := filepath.Join(RepoRoot(t), "docs", "operations.md")
	data, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	var blocks, lines []string
	inside := false
	for _, line := range strings.Split(string(data), "\n") {
		if line == "   (" {
			inside, lines = true, nil
		}
		if inside {
			lines = append(lines, strings.TrimPrefix(line, "   "))
		}
		if line == "   )" && inside {
			inside = false
			blocks = append(blocks, strings.Join(lines, "\n")+"\n")
		}
	}
	// The master's three (before, apply, rollback), then the node's (the kubelet's package), which
	// tests do not paste: dpkg -i there would install on this machine, not into a node's root.
	if len(blocks) != 4 {
		t.Fatalf("%s has %d blocks to paste, want 4 (the master's before, apply, rollback; the node's kubelet)", doc, len(blocks))
	}
	return blocks[:3]
}

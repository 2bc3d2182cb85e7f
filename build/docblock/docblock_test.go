package docblock

import "testing"

func TestGetAndSet(t *testing.T) {
	const start, end = "<!-- table -->", "<!-- /table -->"
	for _, tc := range []struct {
		name, text, block, set string
		ok                     bool
	}{
		{name: "a block", text: "# Page\n" + start + "\n| old |\n" + end + "\nAfter.\n",
			block: "| old |\n", set: "# Page\n" + start + "\n| new |\n" + end + "\nAfter.\n", ok: true},
		{name: "an empty block", text: start + "\n" + end + "\n", block: "", set: start + "\n| new |\n" + end + "\n", ok: true},
		{name: "the start marker's line goes on", text: start + " (generated)\n| old |\n" + end + "\n",
			block: "| old |\n", set: start + " (generated)\n| new |\n" + end + "\n", ok: true},
		{name: "an end marker before the start only", text: end + "\n" + start + "\n| old |\n"},
		{name: "no start marker", text: "| old |\n" + end + "\n"},
		{name: "a start marker ending the text", text: "| old |\n" + start},
	} {
		t.Run(tc.name, func(t *testing.T) {
			block, ok := Get(tc.text, start, end)
			if ok != tc.ok || block != tc.block {
				t.Errorf("Get: %q, %v; want %q, %v", block, ok, tc.block, tc.ok)
			}
			set, ok := Set(tc.text, start, end, "| new |\n")
			if ok != tc.ok || set != tc.set {
				t.Errorf("Set: %q, %v; want %q, %v", set, ok, tc.set, tc.ok)
			}
		})
	}
}

// Package docblock reads and writes the generated part of a document: the lines between a start
// marker line and an end marker line. make bench writes the README's headline so, make
// ha-figures and make ha-upgrade-figures docs/ha.md's tables; make lint (build/cmd/figures) reads
// them back to compare.
package docblock

import "strings"

// bounds returns where the block between the line that begins with start and the next line that
// begins with end starts and ends in text.
func bounds(text, start, end string) (from, to int, ok bool) {
	i := strings.Index(text, start)
	if i < 0 {
		return 0, 0, false
	}
	eol := strings.Index(text[i:], "\n")
	if eol < 0 {
		return 0, 0, false
	}
	from = i + eol + 1
	j := strings.Index(text[from:], end)
	if j < 0 {
		return 0, 0, false
	}
	return from, from + j, true
}

// Get returns the lines between the markers, without the markers' lines; ok is false when text
// has no start marker line or no end marker after it.
func Get(text, start, end string) (block string, ok bool) {
	from, to, ok := bounds(text, start, end)
	if !ok {
		return "", false
	}
	return text[from:to], true
}

// Set returns text with block between the markers instead of what stood there.
func Set(text, start, end, block string) (updated string, ok bool) {
	from, to, ok := bounds(text, start, end)
	if !ok {
		return "", false
	}
	return text[:from] + block + text[to:], true
}

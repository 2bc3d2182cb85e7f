// Package figures renders figures lines as the tables of docs/ha.md: the HA fault suite's
// (test/regression/ha writes one line per scenario and build to figures.txt; make ha-figures
// collects them in docs/ha-figures.tsv) and the three-master roll's (test/haupgrade writes
// ha-upgrade.tsv; make ha-upgrade-figures copies it to docs/ha-upgrade.tsv). Each make target
// writes its table between the table's markers; make lint (build/cmd/figures) renders the
// tables again and compares.
package figures

import (
	"fmt"
	"strings"

	"github.com/idc-lts/kube-1.17/build/docblock"
)

// Kind is one table: the markers around it in docs/ha.md and the fields of its lines.
type Kind struct {
	// Start and End are the marker lines around the table.
	Start, End string
	// Keys are the first fields of a line, as they are; the header names them.
	Keys []string
	// Columns are the fields after the keys, each written "<name> <value>"; the header names
	// them and the cells hold the values. Any fields after them go to the last column, "more".
	Columns []string
}

// Faults is the HA fault suite's table: one line per scenario and build.
var Faults = Kind{
	Start:   "<!-- ha-figures: docs/ha-figures.tsv as make ha-figures renders it; make lint checks the copy -->",
	End:     "<!-- /ha-figures -->",
	Keys:    []string{"scenario", "build"},
	Columns: []string{"recovery", "leaders", "live Endpoints lost", "dual writes"},
}

// Upgrade is the three-master roll's table: one line per pasted block (step) and master, then one
// per kind of step over the whole roll.
var Upgrade = Kind{
	Start: "<!-- ha-upgrade: docs/ha-upgrade.tsv as make ha-upgrade-figures renders it; make lint checks the copy -->",
	End:   "<!-- /ha-upgrade -->",
	Keys:  []string{"step", "master"},
	Columns: []string{"wall", "kcm no leader (handovers)", "scheduler no leader (handovers)", "dual leaders",
		"Endpoints lag p50/p99/max (n)", "client failed/requests"},
}

// Field is one column's field of a line: the column's name, a space, the value.
func Field(column, value string) string { return column + " " + value }

// Table renders figures lines (tab-separated: the keys, the columns, then any number of
// line-specific figures) in their order as a Markdown table.
func (k Kind) Table(tsv string) (string, error) {
	var b strings.Builder
	b.WriteString("| " + strings.Join(k.Keys, " | ") + " | " + strings.Join(k.Columns, " | ") + " | more |\n")
	b.WriteString("|" + strings.Repeat("---|", len(k.Keys)+len(k.Columns)+1) + "\n")
	lines := 0
	for i, line := range strings.Split(strings.TrimRight(tsv, "\n"), "\n") {
		if line == "" {
			continue
		}
		fields := strings.Split(line, "\t")
		if want := len(k.Keys) + len(k.Columns); len(fields) < want {
			return "", fmt.Errorf("line %d has %d fields, want at least %d (%s, %s): %q",
				i+1, len(fields), want, strings.Join(k.Keys, ", "), strings.Join(k.Columns, ", "), line)
		}
		cells := fields[:len(k.Keys)]
		for c, name := range k.Columns {
			field := fields[len(k.Keys)+c]
			value, ok := strings.CutPrefix(field, name+" ")
			if !ok {
				return "", fmt.Errorf("line %d: field %d is %q, want %q followed by its value", i+1, len(k.Keys)+c+1, field, name)
			}
			cells = append(cells, value)
		}
		cells = append(cells, strings.Join(fields[len(k.Keys)+len(k.Columns):], "; "))
		b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
		lines++
	}
	if lines == 0 {
		return "", fmt.Errorf("no figures lines")
	}
	return b.String(), nil
}

// Block returns what stands between the markers in page, without the markers' lines.
func (k Kind) Block(page string) (string, error) {
	block, ok := docblock.Get(page, k.Start, k.End)
	if !ok {
		return "", fmt.Errorf("no figures block (%q ... %q)", k.Start, k.End)
	}
	return block, nil
}

// Replace returns page with table between the markers.
func (k Kind) Replace(page, table string) (string, error) {
	updated, ok := docblock.Set(page, k.Start, k.End, table)
	if !ok {
		return "", fmt.Errorf("no figures block (%q ... %q)", k.Start, k.End)
	}
	return updated, nil
}

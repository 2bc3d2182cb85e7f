// Package summary computes docs/benchmarks.md's opening figures from the page's own tables, so
// that the summary, and the README's headline copied from it, cannot say anything the tables do
// not: make bench writes the summary with it, and make lint (build/cmd/figures) computes it
// again from the committed page and names each figure that differs.
package summary

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// The README's headline block: the page's summary, copied between these markers by make bench
// (test/bench/report); make lint checks the copy.
const (
	HeadlineStart = "<!-- headline: docs/benchmarks.md's summary, copied by make bench; make lint checks the copy -->"
	HeadlineEnd   = "<!-- /headline -->"
)

// Table is one Markdown table of a page: its rows, each a map from column name to cell.
type Table struct {
	Section string
	Columns []string
	Rows    []map[string]string
}

var (
	headingRE   = regexp.MustCompile(`^#{1,6}\s+(.*)$`)
	separatorRE = regexp.MustCompile(`^\|(\s*:?-{3,}:?\s*\|)+\s*$`)
)

// Tables returns the first table of each section of a Markdown page, by the section's heading
// (without its #s); fenced code is skipped. A column name that repeats keeps its first cell.
func Tables(page string) map[string]*Table {
	tables := map[string]*Table{}
	var section string
	var table *Table
	fenced := false
	for _, line := range strings.Split(page, "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		if m := headingRE.FindStringSubmatch(line); m != nil {
			section, table = strings.TrimSpace(m[1]), nil
			continue
		}
		if !strings.HasPrefix(trimmed, "|") {
			if table != nil {
				section = "" // one table per section: the first
			}
			table = nil
			continue
		}
		switch {
		case section == "":
		case table == nil:
			if _, seen := tables[section]; !seen {
				table = &Table{Section: section, Columns: cells(trimmed)}
				tables[section] = table
			}
		case separatorRE.MatchString(trimmed):
		default:
			row := map[string]string{}
			for i, cell := range cells(trimmed) {
				if i < len(table.Columns) {
					if _, dup := row[table.Columns[i]]; !dup {
						row[table.Columns[i]] = cell
					}
				}
			}
			table.Rows = append(table.Rows, row)
		}
	}
	return tables
}

func cells(line string) []string {
	parts := strings.Split(strings.Trim(line, "|"), "|")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return parts
}

// Lines returns a page's summary as written: the lines beginning "- **" before its line
// "- Machine:" (the glossaries further down begin "- **" too). None when it has none.
func Lines(page string) []string {
	var lines []string
	for _, line := range strings.Split(page, "\n") {
		if strings.HasPrefix(line, "- Machine:") {
			return lines
		}
		if strings.HasPrefix(line, "- **") {
			lines = append(lines, line)
		}
	}
	return nil
}

// The cases of the summary, in its order: each reads the first table of the section of its name.
const (
	Resync   = "Resync"
	Failover = "Failover"
	FanOut   = "Watch fan-out"
)

// Cases are the summary's lines, in order.
var Cases = []string{Resync, Failover, FanOut}

// run is a table row with what picks it as a headline parsed out of its "run" cell
// ("20/30 +failover +starts=9": the QPS and what the run added).
type run struct {
	row                     map[string]string
	services, qps, watchers int
}

var watchersRE = regexp.MustCompile(`\+watchers=(\d+)`)

func parseRun(row map[string]string) (run, error) {
	r := run{row: row}
	var err error
	if r.services, err = strconv.Atoi(row["Services"]); err != nil {
		return r, fmt.Errorf("a row's Services is %q, not a number", row["Services"])
	}
	rate := strings.SplitN(row["run"], "/", 2)[0]
	if r.qps, err = strconv.Atoi(rate); err != nil {
		return r, fmt.Errorf("a row's run is %q, which does not begin with its QPS", row["run"])
	}
	if m := watchersRE.FindStringSubmatch(row["run"]); m != nil {
		r.watchers, _ = strconv.Atoi(m[1])
	}
	return r, nil
}

// better says whether run a makes a better headline than b: more watchers (the load that shows
// the fan-out's harm), then more Services, then the lower rate (the default).
func better(a, b run) bool {
	if a.watchers != b.watchers {
		return a.watchers > b.watchers
	}
	if a.services != b.services {
		return a.services > b.services
	}
	return a.qps < b.qps
}

// pick returns the best headline among the table's rows of ours that keep (says which runs count)
// and have a stock row of the same Services and run, and that stock row.
func pick(table *Table, keep func(run) bool) (ours, stock run, found bool, err error) {
	stocks := map[string]run{}
	var candidates []run
	for _, row := range table.Rows {
		r, err := parseRun(row)
		if err != nil {
			return ours, stock, false, err
		}
		if !keep(r) {
			continue
		}
		key := row["Services"] + " " + row["run"]
		if row["build"] == "stock" {
			stocks[key] = r
		} else {
			candidates = append(candidates, r)
		}
	}
	sort.SliceStable(candidates, func(i, j int) bool { return better(candidates[i], candidates[j]) })
	for _, r := range candidates {
		if s, ok := stocks[r.row["Services"]+" "+r.row["run"]]; ok {
			return r, s, true, nil
		}
	}
	return ours, stock, false, nil
}

// count is the count a cell begins with: "12860 of 12900" is 12860.
func count(cell string) (string, error) {
	n := strings.Fields(cell + " -")[0]
	if _, err := strconv.Atoi(n); err != nil {
		return "", fmt.Errorf("%q does not begin with a count", cell)
	}
	return n, nil
}

// failed is how many probe requests failed, from a "failed" cell: "none", or "3 x cause, ...".
func failed(cell string) (string, error) {
	if cell == "none" {
		return "0", nil
	}
	total := 0
	for _, cause := range strings.Split(cell, ", ") {
		n, err := count(cause)
		if err != nil {
			return "", fmt.Errorf("failed %q: want \"none\" or \"N x cause, ...\"", cell)
		}
		v, _ := strconv.Atoi(n)
		total += v
	}
	return strconv.Itoa(total), nil
}

// slowColumnRE is the fan-out table's count of probe requests over the slow threshold ("over 1 s");
// the summary says the threshold as Go prints a duration ("1s").
var slowColumnRE = regexp.MustCompile(`^over (\d+) s$`)

// Line is one case of the summary: its text, or why the tables give none.
type Line struct {
	Case, Text, Missing string
}

// pair is the chosen ours and stock rows of a case, with their cells looked up by column.
type pair struct {
	table       *Table
	ours, stock run
}

// cell returns build's cell of column, failing when the table has no such column.
func (p pair) cell(build, column string) (string, error) {
	for _, c := range p.table.Columns {
		if c == column {
			if build == "stock" {
				return p.stock.row[column], nil
			}
			return p.ours.row[column], nil
		}
	}
	return "", fmt.Errorf("the %s table has no column %q", p.table.Section, column)
}

// cells looks up, for each "build:column" (build stock or ours; column with an optional
// conversion "count:" or "failed:"), its cell.
func (p pair) cells(specs ...string) ([]interface{}, error) {
	var out []interface{}
	for _, spec := range specs {
		parts := strings.SplitN(spec, ":", 3)
		build, column, convert := parts[0], parts[len(parts)-1], ""
		if len(parts) == 3 {
			convert = parts[1]
		}
		value, err := p.cell(build, column)
		if err != nil {
			return nil, err
		}
		switch convert {
		case "count":
			value, err = count(value)
		case "failed":
			value, err = failed(value)
		}
		if err != nil {
			return nil, fmt.Errorf("the %s table's %s row %s: %v", p.table.Section, build, column, err)
		}
		out = append(out, value)
	}
	return out, nil
}

// FromTables computes the summary of a benchmarks page from its tables: one Line per case, the
// best-loaded run of ours that the table pairs with a stock run of the same Services and run.
// A case whose table has no such pair (make bench narrowed to some runs) has Missing set; a
// table that lacks a column the case quotes, or whose cells do not parse, is an error.
func FromTables(tables map[string]*Table) ([]Line, error) {
	var lines []Line
	for _, c := range Cases {
		line := Line{Case: c}
		table := tables[c]
		if table == nil {
			line.Missing = fmt.Sprintf("the page has no section %q with a table", c)
			lines = append(lines, line)
			continue
		}
		keep := map[string]func(run) bool{
			Resync:   func(r run) bool { return r.watchers == 0 },
			Failover: func(r run) bool { return strings.Contains(r.row["run"], "+failover") },
			FanOut:   func(run) bool { return true },
		}[c]
		ours, stock, found, err := pick(table, keep)
		if err != nil {
			return nil, fmt.Errorf("the %s table: %v", c, err)
		}
		if !found {
			line.Missing = fmt.Sprintf("the %s table has no run of ours with a stock run of the same Services and run", c)
			lines = append(lines, line)
			continue
		}
		p := pair{table: table, ours: ours, stock: stock}
		var format string
		var args []interface{}
		switch c {
		case Resync:
			format = "- **Resync.** At %d headless Services and `--kube-api-qps=%d`, a pod deleted during a resync left its " +
				"Endpoints after %s (p99; max %s) on stock v1.17.3 and after %s (p99; max %s) on ours, and the resync wrote %s " +
				"Endpoints instead of %s."
			args, err = p.cells("stock:p99", "stock:max", "ours:p99", "ours:max", "ours:count:resync writes", "stock:count:resync writes")
		case Failover:
			format = "- **Failover.** With the leader SIGKILLed at %d Services and `--kube-api-qps=%d`, the standby took over in " +
				"%s (stock) and %s (ours). Stock's new leader then rewrote %s Endpoints and a pod deleted at the kill left its " +
				"Endpoints after %s (p99; max %s); ours wrote %s and the p99 was %s (max %s), the takeover's %s included."
			args, err = p.cells("stock:takeover", "ours:takeover", "stock:count:startup writes", "stock:p99", "stock:max",
				"ours:count:startup writes", "ours:p99", "ours:max", "ours:takeover")
		case FanOut:
			slow := ""
			for _, column := range table.Columns {
				if m := slowColumnRE.FindStringSubmatch(column); m != nil {
					slow = column
				}
			}
			if slow == "" {
				return nil, fmt.Errorf("the %s table has no column \"over N s\"", c)
			}
			threshold := strings.TrimSuffix(strings.TrimPrefix(slow, "over "), " s") + "s"
			format = "- **Watch fan-out.** During a resync at %d Services and `--kube-api-qps=%d` with %d Endpoints watchers, " +
				"stock sent the watchers %s events (%s MB) and an ordinary client's GETs and LISTs took up to %s (p99 %s; %s over " +
				threshold + ", %s failed); ours sent %s events (%s MB) and the client's requests took up to %s (p99 %s; %s over " +
				threshold + ", %s failed)."
			args, err = p.cells("stock:watch events sent", "stock:MB sent", "stock:max", "stock:p99", "stock:"+slow,
				"stock:failed:failed", "ours:watch events sent", "ours:MB sent", "ours:max", "ours:p99", "ours:"+slow, "ours:failed:failed")
			args = append([]interface{}{ours.watchers}, args...)
		}
		if err != nil {
			return nil, err
		}
		line.Text = fmt.Sprintf(format, append([]interface{}{ours.services, ours.qps}, args...)...)
		lines = append(lines, line)
	}
	return lines, nil
}

// Check computes page's summary from its tables and returns each case that differs from the
// summary the page has, naming the words on both sides, or that the tables cannot give.
func Check(page string) ([]string, error) {
	computed, err := FromTables(Tables(page))
	if err != nil {
		return nil, err
	}
	var problems []string
	got := Lines(page)
	var want []string
	for _, line := range computed {
		if line.Missing == "" {
			want = append(want, line.Text)
			continue
		}
		problems = append(problems, fmt.Sprintf("no %s line can be computed: %s", line.Case, line.Missing))
		// The page's line of that case, if any, is not compared: the problem above names it.
		for i, g := range got {
			if label(g) == line.Case {
				got = append(got[:i:i], got[i+1:]...)
				break
			}
		}
	}
	return append(problems, Differences(got, want, "the summary", "the summary computed from its tables")...), nil
}

// label is a summary line's case, from its "- **Case.**" opening; "" when it has none.
func label(line string) string {
	if rest, ok := strings.CutPrefix(line, "- **"); ok {
		if end := strings.Index(rest, ".**"); end > 0 {
			return rest[:end]
		}
	}
	return ""
}

// Differences compares two summaries case by case (lines without a case label by position) and
// says, for each that differs, which words each has that the other does not, as "the <Case> line
// of <got side> has X where <want side> has Y", or which has a line the other lacks.
func Differences(got, want []string, gotName, wantName string) []string {
	key := func(line string, i int) string {
		if l := label(line); l != "" {
			return l
		}
		return fmt.Sprintf("#%d", i+1)
	}
	gotBy := map[string]string{}
	for i, line := range got {
		gotBy[key(line, i)] = line
	}
	var problems []string
	wanted := map[string]bool{}
	for i, w := range want {
		name := key(w, i)
		wanted[name] = true
		g, ok := gotBy[name]
		if !ok {
			problems = append(problems, fmt.Sprintf("%s has no %s line; %s has %q", gotName, name, wantName, w))
			continue
		}
		if g == w {
			continue
		}
		gw, ww := strings.Fields(g), strings.Fields(w)
		prefix := 0
		for prefix < len(gw) && prefix < len(ww) && gw[prefix] == ww[prefix] {
			prefix++
		}
		suffix := 0
		for suffix < len(gw)-prefix && suffix < len(ww)-prefix && gw[len(gw)-1-suffix] == ww[len(ww)-1-suffix] {
			suffix++
		}
		gotWords, wantWords := strings.Join(gw[prefix:len(gw)-suffix], " "), strings.Join(ww[prefix:len(ww)-suffix], " ")
		if gotWords == "" && wantWords == "" {
			problems = append(problems, fmt.Sprintf("the %s line of %s differs from %s in white space only: %q, want %q", name, gotName, wantName, g, w))
			continue
		}
		problems = append(problems, fmt.Sprintf("the %s line of %s has %q where %s has %q", name, gotName, gotWords, wantName, wantWords))
	}
	for i, g := range got {
		if name := key(g, i); !wanted[name] {
			problems = append(problems, fmt.Sprintf("%s has a %s line that %s does not: %q", gotName, name, wantName, g))
		}
	}
	return problems
}

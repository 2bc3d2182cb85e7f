// Package vulncheck holds what we ship to the Go vulnerability database's scanner: it reads
// govulncheck's JSON output for each scanned target (a binary of the release, or one of this
// repository's modules in source mode), and the table of explanations in patches/SECURITY.md,
// one row per OSV id, and checks that every finding has a row and that every row still answers
// a finding. It also renders, per target, what a security team reads beside the SBOM: each
// finding with its symbols and our answer.
package vulncheck

import (
	"bufio"
	"debug/elf"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"
)

// Finding is one vulnerability (an OSV entry) that govulncheck found in a target at symbol level:
// the target contains, or in source mode calls, a function the entry names. Findings at module or
// package level only (the vulnerable code is not in the binary) are counted, not listed.
type Finding struct {
	ID           string   // GO-2023-2153
	Aliases      []string // CVE-..., GHSA-...
	Summary      string
	Module       string // golang.org/x/net, or "stdlib"
	Version      string // the version linked
	FixedVersion string // "" where no release fixes it
	Symbols      []string
}

// Scan is what govulncheck reported for one target.
type Scan struct {
	Target         string // linux-amd64/kube-controller-manager, or source:images/builder
	ScannerVersion string
	DB             string
	DBLastModified time.Time
	GoVersion      string
	Mode           string
	Findings       []Finding // symbol level, by ID
	Imported       []string  // OSV ids found only at module or package level
}

type message struct {
	Config *struct {
		ScannerName    string     `json:"scanner_name"`
		ScannerVersion string     `json:"scanner_version"`
		DB             string     `json:"db"`
		DBLastModified *time.Time `json:"db_last_modified"`
		GoVersion      string     `json:"go_version"`
		ScanMode       string     `json:"scan_mode"`
		ScanLevel      string     `json:"scan_level"`
	} `json:"config"`
	OSV *struct {
		ID      string   `json:"id"`
		Aliases []string `json:"aliases"`
		Summary string   `json:"summary"`
	} `json:"osv"`
	Finding *struct {
		OSV          string `json:"osv"`
		FixedVersion string `json:"fixed_version"`
		Trace        []struct {
			Module   string `json:"module"`
			Version  string `json:"version"`
			Package  string `json:"package"`
			Function string `json:"function"`
			Receiver string `json:"receiver"`
		} `json:"trace"`
	} `json:"finding"`
}

// ParseScan reads govulncheck's -format json output (a stream of messages) for one target.
func ParseScan(target string, r io.Reader) (*Scan, error) {
	scan := &Scan{Target: target}
	type osvInfo struct {
		aliases []string
		summary string
	}
	osvs := map[string]osvInfo{}
	byID := map[string]*Finding{}
	levelOnly := map[string]bool{}
	dec := json.NewDecoder(bufio.NewReader(r))
	sawConfig := false
	for {
		var m message
		if err := dec.Decode(&m); err == io.EOF {
			break
		} else if err != nil {
			return nil, fmt.Errorf("%s: govulncheck's JSON output: %v", target, err)
		}
		switch {
		case m.Config != nil:
			sawConfig = true
			scan.ScannerVersion = m.Config.ScannerVersion
			scan.DB = m.Config.DB
			if m.Config.DBLastModified != nil {
				scan.DBLastModified = *m.Config.DBLastModified
			}
			scan.GoVersion = m.Config.GoVersion
			scan.Mode = m.Config.ScanMode
			// Only a symbol-level scan reports findings at symbol level: a module- or package-
			// level one would pass with none.
			if m.Config.ScanLevel != "symbol" {
				return nil, fmt.Errorf("%s: govulncheck scanned at level %q, want \"symbol\"", target, m.Config.ScanLevel)
			}
		case m.OSV != nil:
			osvs[m.OSV.ID] = osvInfo{m.OSV.Aliases, m.OSV.Summary}
		case m.Finding != nil:
			f := m.Finding
			if len(f.Trace) == 0 {
				return nil, fmt.Errorf("%s: finding %s has no trace", target, f.OSV)
			}
			top := f.Trace[0]
			if top.Function == "" {
				levelOnly[f.OSV] = true
				continue
			}
			symbol := top.Package + "." + top.Function
			switch {
			case strings.HasSuffix(top.Function, "*"):
				// An entry that names a whole package (govulncheck writes its "symbol" as
				// "<package path>/*", split oddly between receiver and function).
				symbol = top.Package + " (the whole package)"
			case top.Receiver != "":
				symbol = top.Package + "." + strings.TrimPrefix(top.Receiver, "*") + "." + top.Function
			}
			found := byID[f.OSV]
			if found == nil {
				found = &Finding{ID: f.OSV, Module: top.Module, Version: top.Version, FixedVersion: f.FixedVersion}
				byID[f.OSV] = found
			}
			found.Symbols = appendNew(found.Symbols, symbol)
		}
	}
	if !sawConfig {
		return nil, fmt.Errorf("%s: no govulncheck config message: not govulncheck -format json output", target)
	}
	for id, f := range byID {
		f.Aliases, f.Summary = osvs[id].aliases, osvs[id].summary
		sort.Strings(f.Symbols)
		scan.Findings = append(scan.Findings, *f)
	}
	sort.Slice(scan.Findings, func(i, j int) bool { return scan.Findings[i].ID < scan.Findings[j].ID })
	for id := range levelOnly {
		if byID[id] == nil {
			scan.Imported = append(scan.Imported, id)
		}
	}
	sort.Strings(scan.Imported)
	return scan, nil
}

// symbolList names the first symbols found and counts the rest: an advisory of a module whose
// generated types a binary holds (etcd's) can match hundreds; govulncheck's JSON has them all.
func symbolList(symbols []string) string {
	const shown = 6
	if len(symbols) <= shown {
		return strings.Join(symbols, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(symbols[:shown], ", "), len(symbols)-shown)
}

func appendNew(list []string, s string) []string {
	for _, have := range list {
		if have == s {
			return list
		}
	}
	return append(list, s)
}

// Modules counts the distinct modules of a scan's findings.
func (s *Scan) Modules() int {
	seen := map[string]bool{}
	for _, f := range s.Findings {
		seen[f.Module] = true
	}
	return len(seen)
}

// Row is one explanation in SECURITY.md's table: | OSV | module | symbols | answer | reachable if |.
type Row struct {
	Line        int
	ID          string
	Module      string
	Symbols     string
	Answer      string // why it is not reachable or not exploitable here
	ReachableIf string // what would make it reachable
}

// TableHeading starts the section of SECURITY.md whose table explains each finding.
const TableHeading = "## Known Go vulnerabilities left in what we ship"

var osvID = regexp.MustCompile(`^GO-\d{4}-\d{4,}$`)

// ParseTable reads the rows of the table headed "| OSV |" under TableHeading (up to the next "## "
// heading).
func ParseTable(text string) (map[string]Row, error) {
	rows := map[string]Row{}
	// in: inside the section; table: inside its table whose header starts "| OSV" (the section's
	// other tables, such as the counts, are prose).
	in, table, sawHeading := false, false, false
	for i, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "## ") {
			in = strings.HasPrefix(line, TableHeading)
			sawHeading = sawHeading || in
			continue
		}
		switch {
		case !in || !strings.HasPrefix(line, "|"):
			table = false
			continue
		case strings.HasPrefix(line, "| OSV"):
			table = true
			continue
		case !table || strings.HasPrefix(line, "|---"):
			continue
		}
		cells := strings.Split(strings.Trim(strings.TrimSpace(line), "|"), "|")
		if len(cells) != 5 {
			return nil, fmt.Errorf("SECURITY.md line %d: want 5 cells (OSV, module, symbols, why not reachable, reachable if), got %d", i+1, len(cells))
		}
		for j := range cells {
			cells[j] = strings.TrimSpace(cells[j])
		}
		row := Row{Line: i + 1, ID: strings.Trim(cells[0], "`"), Module: strings.Trim(cells[1], "`"), Symbols: cells[2], Answer: cells[3], ReachableIf: cells[4]}
		if !osvID.MatchString(row.ID) {
			return nil, fmt.Errorf("SECURITY.md line %d: %q is not an OSV id (GO-YYYY-NNNN)", i+1, row.ID)
		}
		if row.Answer == "" || row.ReachableIf == "" {
			return nil, fmt.Errorf("SECURITY.md line %d: %s has no answer or no 'reachable if'", i+1, row.ID)
		}
		if prev, dup := rows[row.ID]; dup {
			return nil, fmt.Errorf("SECURITY.md line %d: %s already has a row at line %d", i+1, row.ID, prev.Line)
		}
		rows[row.ID] = row
	}
	if !sawHeading {
		return nil, fmt.Errorf("SECURITY.md has no section %q", TableHeading)
	}
	return rows, nil
}

// Check returns one problem per finding that has no row (or a row naming another module) and,
// when stale is true, per row whose id no scan reports at symbol level. Baseline scans (stock,
// for comparison) are not held to the table: pass only the scans of what we ship.
func Check(scans []*Scan, rows map[string]Row, stale bool) []string {
	var problems []string
	found := map[string]bool{}
	for _, s := range scans {
		for _, f := range s.Findings {
			found[f.ID] = true
			row, ok := rows[f.ID]
			switch {
			case !ok:
				problems = append(problems, fmt.Sprintf("%s: %s (%s %s, %s) has no row in SECURITY.md's %q: fix it or explain it",
					s.Target, f.ID, f.Module, f.Version, symbolList(f.Symbols), TableHeading))
			case row.Module != f.Module:
				problems = append(problems, fmt.Sprintf("%s: %s is in %s, but SECURITY.md line %d says %s", s.Target, f.ID, f.Module, row.Line, row.Module))
			}
		}
	}
	if stale {
		for _, id := range slices.Sorted(maps.Keys(rows)) {
			if !found[id] {
				problems = append(problems, fmt.Sprintf("SECURITY.md line %d: %s is no longer reported by any scan: remove the stale row", rows[id].Line, id))
			}
		}
	}
	return dedupe(problems)
}

func dedupe(list []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range list {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// Fixed lists the ids a baseline scan reports at symbol level that the scan of ours does not.
func Fixed(baseline, ours *Scan) []string {
	have := map[string]bool{}
	for _, f := range ours.Findings {
		have[f.ID] = true
	}
	var fixed []string
	for _, f := range baseline.Findings {
		if !have[f.ID] {
			fixed = append(fixed, f.ID)
		}
	}
	return fixed
}

// WriteReport writes what a security team reads for one target: the scanner, the database and
// each finding with its symbols and our answer from SECURITY.md.
func WriteReport(w io.Writer, s *Scan, rows map[string]Row) error {
	b := &strings.Builder{}
	fmt.Fprintf(b, "govulncheck %s, %s mode, database %s (modified %s), %s\n", s.ScannerVersion, s.Mode, s.DB, s.DBLastModified.UTC().Format("2006-01-02"), s.GoVersion)
	fmt.Fprintf(b, "%s: %d known vulnerabilities at symbol level in %d modules; %d more in modules or packages it links but whose vulnerable functions it does not contain.\n",
		s.Target, len(s.Findings), s.Modules(), len(s.Imported))
	fmt.Fprintf(b, "Each is explained in patches/SECURITY.md, %q.\n", TableHeading)
	for _, f := range s.Findings {
		fixed := f.FixedVersion
		if fixed == "" {
			fixed = "no fixed release"
		}
		fmt.Fprintf(b, "\n%s\n  %s\n  module: %s %s (fixed in %s)\n  found: %s\n", strings.Join(append([]string{f.ID}, f.Aliases...), " "), f.Summary, f.Module, f.Version, fixed, symbolList(f.Symbols))
		if row, ok := rows[f.ID]; ok {
			fmt.Fprintf(b, "  why it is not reachable or not exploitable here: %s\n  what would make it reachable: %s\n", row.Answer, row.ReachableIf)
		} else {
			fmt.Fprintf(b, "  NOT EXPLAINED\n")
		}
	}
	if len(s.Imported) > 0 {
		fmt.Fprintf(b, "\nIn linked modules or packages only (the vulnerable functions are not in the binary): %s\n", strings.Join(s.Imported, " "))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// CheckSymbolTable fails for a binary without a symbol table (linked with -s): govulncheck
// cannot tell which functions such a binary holds, and reports every symbol of every entry of
// every module it links (v1.9.0: "we report vulnerabilities at the go.mod-level precision").
func CheckSymbolTable(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if f.Section(".symtab") == nil {
		return fmt.Errorf("%s has no symbol table (linked with -s): govulncheck would judge it module by module, not by the functions it holds; build it without -s", path)
	}
	return nil
}

// Count is one binary's figures for the docs: its findings, and stock's where there is a stock
// build of it (cpswap has none).
type Count struct {
	Binary      string
	Ours, Stock int
	Fixed       int
	HasStock    bool
}

// Counts gives the figures of the binaries built for arch, in the order of the scans.
func Counts(ours, baselines []*Scan, arch string) []Count {
	var counts []Count
	for _, s := range ours {
		dir, binary, ok := strings.Cut(s.Target, "/")
		if !ok || dir != "linux-"+arch {
			continue
		}
		c := Count{Binary: binary, Ours: len(s.Findings)}
		for _, b := range baselines {
			if strings.HasSuffix(b.Target, "/"+s.Target) {
				c.HasStock, c.Stock, c.Fixed = true, len(b.Findings), len(Fixed(b, s))
			}
		}
		counts = append(counts, c)
	}
	return counts
}

// TableRow is a binary's row of SECURITY.md's counts table.
func (c Count) TableRow() string {
	if !c.HasStock {
		return fmt.Sprintf("| %s | — | %d | — | %d |", c.Binary, c.Ours, c.Ours)
	}
	return fmt.Sprintf("| %s | %d | %d | %d | %d |", c.Binary, c.Stock, c.Ours, c.Fixed, c.Ours)
}

// Sentence is the README's summary of a scan.
func Sentence(scanner string, date string, counts []Count, explained int) string {
	var parts []string
	for _, c := range counts {
		part := fmt.Sprintf("%d in %s", c.Ours, c.Binary)
		if c.HasStock {
			part += fmt.Sprintf(" (stock v1.17.3: %d, %d of them fixed)", c.Stock, c.Fixed)
		}
		parts = append(parts, part)
	}
	list := strings.Join(parts, ", ")
	if n := len(parts); n > 1 {
		list = strings.Join(parts[:n-1], ", ") + " and " + parts[n-1]
	}
	return fmt.Sprintf("govulncheck %s with the Go vulnerability database of %s finds %s; each of the %d left is explained in [patches/SECURITY.md](patches/SECURITY.md#known-go-vulnerabilities-left-in-what-we-ship).",
		scanner, date, list, explained)
}

var (
	sentenceDate = regexp.MustCompile(`^govulncheck \S+ with the Go vulnerability database of (\d{4}-\d{2}-\d{2}) finds `)
	tableDate    = regexp.MustCompile(`^\| binary \(database of (\d{4}-\d{2}-\d{2})\) \|`)
)

// FigureProblems holds the figures a doc states to this scan: the README's sentence (a line that
// starts "govulncheck VERSION with the Go vulnerability database of DATE finds") and the rows
// under SECURITY.md's counts table (headed "| binary (database of DATE) |"). Figures stated for
// another database date are not compared (skipped says which).
func FigureProblems(doc, text, scanner, date string, counts []Count, explained int) (problems, skipped []string) {
	wantRows := map[string]string{}
	for _, c := range counts {
		wantRows[c.Binary] = c.TableRow()
	}
	var table string // the counts table's date while inside it
	found, tableSeen := false, false
	for i, line := range strings.Split(text, "\n") {
		where := fmt.Sprintf("%s line %d", doc, i+1)
		if m := sentenceDate.FindStringSubmatch(line); m != nil {
			found = true
			want := Sentence(scanner, date, counts, explained)
			switch {
			case m[1] != date:
				skipped = append(skipped, fmt.Sprintf("%s states figures for the database of %s, this scan read %s's", where, m[1], date))
			case line != want:
				problems = append(problems, fmt.Sprintf("%s says\n  %s\nthis scan says\n  %s", where, line, want))
			}
			continue
		}
		if m := tableDate.FindStringSubmatch(line); m != nil {
			found, table = true, m[1]
			tableSeen = tableSeen || table == date
			if table != date {
				skipped = append(skipped, fmt.Sprintf("%s states figures for the database of %s, this scan read %s's", where, table, date))
			}
			continue
		}
		if !strings.HasPrefix(line, "|") {
			table = ""
			continue
		}
		if table != date || strings.HasPrefix(line, "|---") {
			continue
		}
		binary := strings.TrimSpace(strings.SplitN(strings.Trim(line, "|"), "|", 2)[0])
		want, ok := wantRows[binary]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("%s: a row for %s, which this scan does not count", where, binary))
		case line != want:
			problems = append(problems, fmt.Sprintf("%s says %s, this scan says %s", where, line, want))
		}
		delete(wantRows, binary)
	}
	if !found {
		problems = append(problems, fmt.Sprintf("%s states no figures of the scan (a line \"govulncheck VERSION with the Go vulnerability database of DATE finds ...\" or a table headed \"| binary (database of DATE) |\")", doc))
	}
	if tableSeen {
		for _, binary := range slices.Sorted(maps.Keys(wantRows)) {
			problems = append(problems, fmt.Sprintf("%s's counts table has no row for %s: add %s", doc, binary, wantRows[binary]))
		}
	}
	return problems, skipped
}

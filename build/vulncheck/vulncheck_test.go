package vulncheck

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// scanJSON has the shapes govulncheck v1.9.0 writes with -format json: a config, OSV entries,
// a symbol-level finding (twice, two symbols), a finding of an entry that names a whole package
// (its "symbol" split between receiver and function), and a module-level finding.
const scanJSON = `{"config":{"protocol_version":"v1.0.0","scanner_name":"govulncheck","scanner_version":"v1.9.0","db":"file:///db","db_last_modified":"2026-08-21T20:38:00Z","go_version":"go1.26.8","scan_level":"symbol","scan_mode":"binary"}}
{"progress":{"message":"Scanning your binary for known vulnerabilities..."}}
{"osv":{"id":"GO-2021-0064","summary":"Unauthorized credential disclosure via debug logs","aliases":["CVE-2020-8565"]}}
{"osv":{"id":"GO-2026-5932","summary":"openpgp is unmaintained","aliases":[]}}
{"osv":{"id":"GO-2025-3488","summary":"oauth2 jws","aliases":["CVE-2025-22868"]}}
{"finding":{"osv":"GO-2021-0064","fixed_version":"v0.20.0-alpha.2","trace":[{"module":"k8s.io/client-go","version":"v0.17.9","package":"k8s.io/client-go/transport","function":"RoundTrip","receiver":"*debuggingRoundTripper"}]}}
{"finding":{"osv":"GO-2021-0064","fixed_version":"v0.20.0-alpha.2","trace":[{"module":"k8s.io/client-go","version":"v0.17.9","package":"k8s.io/client-go/transport","function":"RoundTrip","receiver":"basicAuthRoundTripper"}]}}
{"finding":{"osv":"GO-2026-5932","trace":[{"module":"golang.org/x/crypto","version":"v0.59.0","package":"golang.org/x/crypto/openpgp","function":"org/x/crypto/openpgp/*","receiver":"golang"}]}}
{"finding":{"osv":"GO-2025-3488","fixed_version":"v0.27.0","trace":[{"module":"golang.org/x/oauth2","version":"v0.11.0"}]}}
`

const security = `# Security

## Known Go vulnerabilities left in what we ship

| binary | stock | ours |
|---|---|---|
| kube-controller-manager | 37 | 13 |

| OSV | module | symbols | why not reachable or not exploitable | reachable if |
|---|---|---|---|---|
| GO-2021-0064 | ` + "`k8s.io/client-go`" + ` | transport RoundTrippers | the curl line is logged at -v=9 only | an operator runs it at -v=9 |

## Go toolchain
| GO-2099-0001 | not | a | table | row |
`

func parse(t *testing.T) *Scan {
	t.Helper()
	s, err := ParseScan("linux-amd64/cpswap", strings.NewReader(scanJSON))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestParseScan(t *testing.T) {
	s := parse(t)
	if len(s.Findings) != 2 || s.Findings[0].ID != "GO-2021-0064" || s.Findings[1].ID != "GO-2026-5932" {
		t.Fatalf("findings %+v, want GO-2021-0064 and GO-2026-5932, by id", s.Findings)
	}
	f := s.Findings[0]
	if want := "k8s.io/client-go/transport.basicAuthRoundTripper.RoundTrip k8s.io/client-go/transport.debuggingRoundTripper.RoundTrip"; strings.Join(f.Symbols, " ") != want {
		t.Errorf("symbols %v, want %s", f.Symbols, want)
	}
	if f.Module != "k8s.io/client-go" || f.Version != "v0.17.9" || f.FixedVersion != "v0.20.0-alpha.2" || f.Aliases[0] != "CVE-2020-8565" {
		t.Errorf("finding %+v", f)
	}
	if got := s.Findings[1].Symbols; len(got) != 1 || got[0] != "golang.org/x/crypto/openpgp (the whole package)" {
		t.Errorf("whole-package symbols %q", got)
	}
	if strings.Join(s.Imported, " ") != "GO-2025-3488" {
		t.Errorf("module level %v, want GO-2025-3488", s.Imported)
	}
	if s.ScannerVersion != "v1.9.0" || s.DBLastModified.Format("2006-01-02") != "2026-08-21" || s.Mode != "binary" || s.Modules() != 2 {
		t.Errorf("config %+v", s)
	}
}

func TestParseScanRejectsWhatIsNotGovulncheckJSON(t *testing.T) {
	for name, in := range map[string]string{
		"not JSON":     "Your code is affected by 2 vulnerabilities",
		"no config":    `{"osv":{"id":"GO-2021-0064"}}`,
		"empty trace":  `{"config":{"scan_level":"symbol"}}` + "\n" + `{"finding":{"osv":"GO-2021-0064"}}`,
		"module level": `{"config":{"scan_level":"module"}}`,
		"empty output": "",
	} {
		if _, err := ParseScan("t", strings.NewReader(in)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestParseTable(t *testing.T) {
	rows, err := ParseTable(security)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows["GO-2021-0064"].Module != "k8s.io/client-go" || rows["GO-2021-0064"].Line != 11 {
		t.Errorf("rows %+v: want only GO-2021-0064's, module unquoted, line 11 (the counts table and another section's rows are not read)", rows)
	}
	for name, text := range map[string]string{
		"no section":    "# Security\n",
		"four cells":    TableHeading + "\n| OSV |\n| GO-2021-0064 | m | s | why |\n",
		"not an id":     TableHeading + "\n| OSV |\n| CVE-2020-8565 | m | s | why | if |\n",
		"empty answer":  TableHeading + "\n| OSV |\n| GO-2021-0064 | m | s |  | if |\n",
		"duplicate row": TableHeading + "\n| OSV |\n| GO-2021-0064 | m | s | why | if |\n| GO-2021-0064 | m | s | why | if |\n",
	} {
		if _, err := ParseTable(text); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestCheck(t *testing.T) {
	row := func(id, module string) Row {
		return Row{Line: 9, ID: id, Module: module, Answer: "a", ReachableIf: "r"}
	}
	source := parse(t) // GO-2021-0064 and GO-2026-5932
	one := parse(t)
	one.Findings = one.Findings[:1] // GO-2021-0064
	for _, tc := range []struct {
		name  string
		scans []*Scan
		rows  map[string]Row
		stale bool
		want  []string // substrings, one per problem
	}{
		{"every finding explained", []*Scan{one}, map[string]Row{"GO-2021-0064": row("GO-2021-0064", "k8s.io/client-go")}, true, nil},
		{"a finding without a row", []*Scan{source}, map[string]Row{"GO-2021-0064": row("GO-2021-0064", "k8s.io/client-go")}, true,
			[]string{"GO-2026-5932 (golang.org/x/crypto v0.59.0, golang.org/x/crypto/openpgp (the whole package)) has no row"}},
		{"a row naming another module", []*Scan{one}, map[string]Row{"GO-2021-0064": row("GO-2021-0064", "k8s.io/kubernetes")}, true,
			[]string{"GO-2021-0064 is in k8s.io/client-go, but SECURITY.md line 9 says k8s.io/kubernetes"}},
		{"a stale row", []*Scan{one}, map[string]Row{"GO-2021-0064": row("GO-2021-0064", "k8s.io/client-go"), "GO-2026-5932": row("GO-2026-5932", "golang.org/x/crypto")}, true,
			[]string{"GO-2026-5932 is no longer reported by any scan"}},
		{"a stale row, not asked", []*Scan{one}, map[string]Row{"GO-2021-0064": row("GO-2021-0064", "k8s.io/client-go"), "GO-2026-5932": row("GO-2026-5932", "golang.org/x/crypto")}, false, nil},
		{"one problem for a finding in two targets", []*Scan{source, source}, map[string]Row{"GO-2021-0064": row("GO-2021-0064", "k8s.io/client-go")}, false,
			[]string{"GO-2026-5932"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Check(tc.scans, tc.rows, tc.stale)
			if len(got) != len(tc.want) {
				t.Fatalf("problems %q, want %d", got, len(tc.want))
			}
			for i, want := range tc.want {
				if !strings.Contains(got[i], want) {
					t.Errorf("problem %q does not say %q", got[i], want)
				}
			}
		})
	}
}

func TestFixed(t *testing.T) {
	stock, ours := parse(t), parse(t)
	ours.Findings = ours.Findings[:1]
	if got := Fixed(stock, ours); len(got) != 1 || got[0] != "GO-2026-5932" {
		t.Errorf("fixed %v, want [GO-2026-5932]", got)
	}
}

func TestWriteReportGivesEachFindingItsAnswer(t *testing.T) {
	rows, err := ParseTable(security)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := WriteReport(&b, parse(t), rows); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"govulncheck v1.9.0, binary mode, database file:///db (modified 2026-08-21), go1.26.8",
		"linux-amd64/cpswap: 2 known vulnerabilities at symbol level in 2 modules; 1 more",
		"GO-2021-0064 CVE-2020-8565",
		"why it is not reachable or not exploitable here: the curl line is logged at -v=9 only",
		"what would make it reachable: an operator runs it at -v=9",
		"\nGO-2026-5932\n", "NOT EXPLAINED",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, b.String())
		}
	}
}

func TestCheckSymbolTable(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		ldflags string
		wantErr bool
	}{
		{"-w", false},
		{"-s -w", true},
	} {
		binary := filepath.Join(dir, strings.ReplaceAll(tc.ldflags, " ", ""))
		cmd := exec.Command("go", "build", "-o", binary, "-ldflags="+tc.ldflags, "./testdata/hello")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build: %v\n%s", err, out)
		}
		err := CheckSymbolTable(binary)
		if (err != nil) != tc.wantErr {
			t.Errorf("linked with %s: error %v, want an error: %v", tc.ldflags, err, tc.wantErr)
		}
	}
	if err := CheckSymbolTable("vulncheck_test.go"); err == nil {
		t.Error("a Go source file read as a binary: no error")
	}
}

func TestFigureProblems(t *testing.T) {
	counts := []Count{
		{Binary: "kube-controller-manager", Ours: 13, Stock: 37, Fixed: 24, HasStock: true},
		{Binary: "cpswap", Ours: 1},
	}
	sentence := Sentence("v1.9.0", "2026-08-21", counts, 14)
	if want := "govulncheck v1.9.0 with the Go vulnerability database of 2026-08-21 finds 13 in kube-controller-manager (stock v1.17.3: 37, 24 of them fixed) and 1 in cpswap; each of the 14 left is explained in"; !strings.HasPrefix(sentence, want) {
		t.Errorf("sentence %q, want it to start %q", sentence, want)
	}
	table := "| binary (database of 2026-08-21) | stock | ours | fixed | explained |\n|---|---|---|---|---|\n| kube-controller-manager | 37 | 13 | 24 | 13 |\n| cpswap | — | 1 | — | 1 |\n\nprose | not a row\n"
	for _, tc := range []struct {
		name, text  string
		wantProblem string // "" for none
		wantSkipped bool
	}{
		{"both as scanned", "intro\n" + sentence + "\n" + table, "", false},
		{"a figure changed in the sentence", strings.Replace(sentence, "13 in", "12 in", 1), "line 1 says", false},
		{"a figure changed in the table", strings.Replace(table, "| 37 | 13 |", "| 37 | 12 |", 1), "line 3 says | kube-controller-manager | 37 | 12 |", false},
		{"a row missing", strings.Replace(table, "| cpswap | — | 1 | — | 1 |\n", "", 1), "no row for cpswap", false},
		{"a row for a binary not scanned", strings.Replace(table, "| cpswap |", "| kubelet |", 1), "a row for kubelet", false},
		{"no figures at all", "# Title\n", "states no figures", false},
		{"figures of another database", strings.Replace(sentence, "2026-08-21", "2026-01-01", 1), "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			problems, skipped := FigureProblems("DOC", tc.text, "v1.9.0", "2026-08-21", counts, 14)
			if (len(skipped) > 0) != tc.wantSkipped {
				t.Errorf("skipped %q, want skipped: %v", skipped, tc.wantSkipped)
			}
			if tc.wantProblem == "" {
				if len(problems) > 0 {
					t.Errorf("problems %q, want none", problems)
				}
				return
			}
			if len(problems) == 0 || !strings.Contains(strings.Join(problems, "\n"), tc.wantProblem) {
				t.Errorf("problems %q, want one saying %q", problems, tc.wantProblem)
			}
		})
	}
}

func TestCounts(t *testing.T) {
	ours, stock, source := parse(t), parse(t), parse(t)
	ours.Findings = ours.Findings[:1]
	stock.Target = "stock/linux-amd64/cpswap"
	source.Target = "source/repository"
	got := Counts([]*Scan{ours, source}, []*Scan{stock}, "amd64")
	if len(got) != 1 || got[0] != (Count{Binary: "cpswap", Ours: 1, Stock: 2, Fixed: 1, HasStock: true}) {
		t.Errorf("counts %+v, want cpswap's only: 1 ours, 2 stock, 1 fixed", got)
	}
	if got := Counts([]*Scan{ours}, nil, "arm64"); len(got) != 0 {
		t.Errorf("arm64 counts %+v from an amd64 scan", got)
	}
}

func TestSymbolListCountsWhatItLeavesOut(t *testing.T) {
	for _, tc := range []struct {
		symbols []string
		want    string
	}{
		{[]string{"a", "b"}, "a, b"},
		{[]string{"a", "b", "c", "d", "e", "f", "g", "h"}, "a, b, c, d, e, f and 2 more"},
	} {
		if got := symbolList(tc.symbols); got != tc.want {
			t.Errorf("symbolList(%q) = %q, want %q", tc.symbols, got, tc.want)
		}
	}
}

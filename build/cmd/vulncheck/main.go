// Command vulncheck holds govulncheck's findings on what we ship to patches/SECURITY.md: every
// finding has a row explaining it, and (with -stale) every row still answers a finding. It prints
// a line per target and writes, with -reports, a TARGET.txt per target beside its JSON.
//
//	vulncheck -security patches/SECURITY.md -stale -reports DIR \
//	  [-baseline stock/linux-amd64/kube-controller-manager=stock.json=BINARY] \
//	  linux-amd64/kube-controller-manager=kcm.json=BINARY source/root=root.json ...
//
// A target scanned in binary mode names its binary after the JSON; a binary without a symbol
// table is refused (govulncheck would report every vulnerable symbol of every module it links).
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/idc-lts/kube-1.17/build/vulncheck"
)

type targets []string

func (t *targets) String() string     { return strings.Join(*t, ",") }
func (t *targets) Set(s string) error { *t = append(*t, s); return nil }

func main() {
	security := flag.String("security", "patches/SECURITY.md", "the file whose table explains each finding")
	stale := flag.Bool("stale", false, "also fail on a row whose id no target reports (use when every shipped target is scanned)")
	reports := flag.String("reports", "", "write TARGET.txt, each finding with its explanation, under this directory")
	arch := flag.String("arch", "amd64", "the architecture whose binaries the docs' figures describe")
	sameDB := flag.Bool("figures-of-this-database", false, "fail when a doc states figures for another database date (a pinned copy of the database)")
	var baselines, docs targets
	flag.Var(&docs, "doc", "a Markdown file whose figures of the scan (README's sentence, SECURITY.md's counts table) must match it; repeatable")
	flag.Var(&baselines, "baseline", "TARGET=JSON[=BINARY] of a build we compare with (stock), not held to the table; repeatable")
	flag.Parse()
	if flag.NArg() == 0 {
		fail("usage: vulncheck [-security FILE] [-stale] [-reports DIR] [-baseline TARGET=JSON[=BINARY]] TARGET=JSON[=BINARY]...")
	}
	text, err := os.ReadFile(*security)
	if err != nil {
		fail("%v", err)
	}
	rows, err := vulncheck.ParseTable(string(text))
	if err != nil {
		fail("%s: %v", *security, err)
	}
	ours := mustParse(flag.Args())
	base := mustParse(baselines)
	for _, s := range base {
		fmt.Printf("vulncheck: %s: %d known vulnerabilities (%d modules) [baseline]\n", s.Target, len(s.Findings), s.Modules())
	}
	for _, s := range ours {
		line := fmt.Sprintf("vulncheck: %s: %d known vulnerabilities (%d modules)", s.Target, len(s.Findings), s.Modules())
		if b := baselineOf(s, base); b != nil {
			line += fmt.Sprintf("; %d of the %d in %s are fixed", len(vulncheck.Fixed(b, s)), len(b.Findings), b.Target)
		}
		fmt.Println(line)
		if *reports != "" {
			path := filepath.Join(*reports, s.Target+".txt")
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				fail("%v", err)
			}
			f, err := os.Create(path)
			if err != nil {
				fail("%v", err)
			}
			if err := vulncheck.WriteReport(f, s, rows); err != nil {
				fail("%s: %v", path, err)
			}
			if err := f.Close(); err != nil {
				fail("%v", err)
			}
		}
	}
	if len(ours) > 0 {
		fmt.Printf("vulncheck: database %s, modified %s\n", ours[0].DB, ours[0].DBLastModified.UTC().Format("2006-01-02"))
	}
	problems := vulncheck.Check(ours, rows, *stale)
	if len(docs) > 0 && len(ours) > 0 {
		ids := map[string]bool{}
		for _, s := range ours {
			for _, f := range s.Findings {
				ids[f.ID] = true
			}
		}
		counts := vulncheck.Counts(ours, base, *arch)
		date := ours[0].DBLastModified.UTC().Format("2006-01-02")
		for _, doc := range docs {
			text, err := os.ReadFile(doc)
			if err != nil {
				fail("%v", err)
			}
			p, skipped := vulncheck.FigureProblems(doc, string(text), ours[0].ScannerVersion, date, counts, len(ids))
			problems = append(problems, p...)
			for _, s := range skipped {
				if *sameDB {
					problems = append(problems, s+": regenerate the figures for this database")
				} else {
					fmt.Printf("vulncheck: not compared: %s\n", s)
				}
			}
		}
		if len(problems) > 0 {
			fmt.Fprintf(os.Stderr, "vulncheck: the figures this scan gives:\n  %s\n", vulncheck.Sentence(ours[0].ScannerVersion, date, counts, len(ids)))
			for _, c := range counts {
				fmt.Fprintf(os.Stderr, "  %s\n", c.TableRow())
			}
		}
	}
	if len(problems) > 0 {
		for _, p := range problems {
			fmt.Fprintf(os.Stderr, "vulncheck: %s\n", p)
		}
		fail("%d problems", len(problems))
	}
	fmt.Printf("vulncheck: every finding in %d targets is explained in %s (%d rows)\n", len(ours), *security, len(rows))
}

// baselineOf is the baseline scan of the same binary (the same name after the variant's prefix).
func baselineOf(s *vulncheck.Scan, base []*vulncheck.Scan) *vulncheck.Scan {
	for _, b := range base {
		if strings.HasSuffix(b.Target, "/"+s.Target) {
			return b
		}
	}
	return nil
}

func mustParse(specs []string) []*vulncheck.Scan {
	var scans []*vulncheck.Scan
	for _, spec := range specs {
		parts := strings.Split(spec, "=")
		if len(parts) < 2 || len(parts) > 3 || parts[0] == "" || parts[1] == "" {
			fail("%q: want TARGET=JSON (source mode) or TARGET=JSON=BINARY", spec)
		}
		target, file := parts[0], parts[1]
		if len(parts) == 3 {
			if err := vulncheck.CheckSymbolTable(parts[2]); err != nil {
				fail("%s: %v", target, err)
			}
		}
		f, err := os.Open(file)
		if err != nil {
			fail("%s: %v", target, err)
		}
		s, err := vulncheck.ParseScan(target, f)
		f.Close()
		if err != nil {
			fail("%s: %v", file, err)
		}
		scans = append(scans, s)
	}
	return scans
}

func fail(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "vulncheck: "+format+"\n", args...)
	os.Exit(1)
}

package summary

import (
	"strings"
	"testing"
)

const tables = `## Resync

| Services | run | build | resync writes | resync pass | deletion p50 | p99 | max |
|---:|---|---|---:|---:|---:|---:|---:|
| 2000 | 20/30 +failover | stock | 1899 of 1900 | 99.0 s | 49.5 s | 86.7 s | 93.9 s |
| 2000 | 20/30 +failover | patched | 0 of 1900 | 297 ms | 35 ms | 55 ms | 67 ms |
| 2000 | 100/120 +watchers=5000 | stock | 3520 of 1900 | 282 s | 84.2 s | 178 s | 198 s |
| 2000 | 100/120 +watchers=5000 | patched | 0 of 1900 | 283 ms | 102 ms | 186 ms | 290 ms |
| 13000 | 20/30 +failover +starts=9 | stock | 12860 of 12900 | 649 s | 308 s | 632 s | 642 s |
| 13000 | 20/30 +failover +starts=9 | patched | 0 of 12900 | 1.0 s | 47 ms | 89 ms | 97 ms |
| 30000 | 20/30 +failover | patched | 0 of 29900 | 2.3 s | 51 ms | 112 ms | 134 ms |

## Failover

| Services | run | build | takeover | ready | startup writes | PUT endpoints | startup pass | deletion p50 | p99 | max |
|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|
| 13000 | 20/30 +failover +starts=9 | stock | 16.7 s | 17.9 s | 12942 of 12900 | 13368 | 652 s | 287 s | 633 s | 661 s |
| 13000 | 20/30 +failover +starts=9 | patched | 15.0 s | 15.3 s | 0 of 12900 | 100 | 240 ms | 2.7 s | 15.1 s | 15.3 s |
| 13000 | 20/30 +handover | stock | 16.0 s | 17.0 s | 12922 of 12900 | 2080 | 100 s | 50.8 s | 600 s | 612 s |
| 13000 | 20/30 +handover | patched | 826 ms | 1.1 s | 0 of 12900 | 100 | 946 ms | 57 ms | 851 ms | 1.1 s |

### Planned handover of kube-scheduler

| build | takeover after each SIGTERM | slowest |
|---|---|---:|
| stock | 17.3 s | 17.4 s |

## Watch fan-out

| Services | run | build | resync writes | watch events sent | MB sent | p50 | p99 | max | over 1 s | failed |
|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---|
| 2000 | 100/120 +watchers=500 | stock | 1896 of 1900 | 1038555 | 344 | 16 ms | 82 ms | 150 ms | 0 | none |
| 2000 | 100/120 +watchers=500 | patched | 0 of 1900 | 50000 | 13 | 16 ms | 36 ms | 43 ms | 0 | none |
| 2000 | 100/120 +watchers=5000 | stock | 3520 of 1900 | 18961792 | 6758 | 225 ms | 10.4 s | 11.9 s | 669 | 3 x 504 Timeout, 2 x EOF |
| 2000 | 100/120 +watchers=5000 | patched | 0 of 1900 | 500000 | 131 | 14 ms | 212 ms | 413 ms | 0 | none |
`

var want = []string{
	"- **Resync.** At 13000 headless Services and `--kube-api-qps=20`, a pod deleted during a resync left its Endpoints after " +
		"632 s (p99; max 642 s) on stock v1.17.3 and after 89 ms (p99; max 97 ms) on ours, and the resync wrote 0 Endpoints instead of 12860.",
	"- **Failover.** With the leader SIGKILLed at 13000 Services and `--kube-api-qps=20`, the standby took over in 16.7 s (stock) and " +
		"15.0 s (ours). Stock's new leader then rewrote 12942 Endpoints and a pod deleted at the kill left its Endpoints after 633 s " +
		"(p99; max 661 s); ours wrote 0 and the p99 was 15.1 s (max 15.3 s), the takeover's 15.0 s included.",
	"- **Watch fan-out.** During a resync at 2000 Services and `--kube-api-qps=100` with 5000 Endpoints watchers, stock sent the " +
		"watchers 18961792 events (6758 MB) and an ordinary client's GETs and LISTs took up to 11.9 s (p99 10.4 s; 669 over 1s, 5 failed); " +
		"ours sent 500000 events (131 MB) and the client's requests took up to 413 ms (p99 212 ms; 0 over 1s, 0 failed).",
}

func page(summary []string, tables string) string {
	return "# Benchmark\n\nIntro.\n\n" + strings.Join(summary, "\n") + "\n\n- Machine: x\n\n" + tables
}

// The summary is the best-loaded pair of each case: the resync without watchers at the most
// Services, the failover by SIGKILL (not the planned handover), the fan-out with the most watchers.
func TestFromTablesPicksEachCasesHeadline(t *testing.T) {
	lines, err := FromTables(Tables(tables))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, line := range lines {
		if line.Missing != "" {
			t.Errorf("%s: %s", line.Case, line.Missing)
		}
		got = append(got, line.Text)
	}
	if problems := Differences(got, want, "computed", "expected"); len(problems) > 0 {
		t.Errorf("summary from the tables:\n%s", strings.Join(problems, "\n"))
	}
}

func TestCheckNamesTheFigureThatDiffers(t *testing.T) {
	for _, tc := range []struct {
		name, from, to string
		// inSummary: the edit is made to the summary (else to the tables).
		inSummary bool
		want      string
	}{
		{name: "none"},
		{name: "a resync p99 in the table", from: "| 632 s | 642 s |", to: "| 640 s | 642 s |",
			want: `the Resync line of the summary has "632" where the summary computed from its tables has "640"`},
		{name: "a failover count in the table", from: "| 12942 of 12900 |", to: "| 12943 of 12900 |",
			want: `the Failover line of the summary has "12942" where the summary computed from its tables has "12943"`},
		{name: "the fan-out's megabytes in the table", from: "| 500000 | 131 |", to: "| 500000 | 130 |",
			want: `the Watch fan-out line of the summary has "(131" where the summary computed from its tables has "(130"`},
		{name: "a figure of the summary", from: "after 89 ms", to: "after 88 ms", inSummary: true,
			want: `the Resync line of the summary has "88" where the summary computed from its tables has "89"`},
		{name: "white space in the summary", from: "12860.", to: "12860. ", inSummary: true,
			want: `the Resync line of the summary differs from the summary computed from its tables in white space only`},
		{name: "a section renamed", from: "## Watch fan-out", to: "## Watch fan-out (protobuf)",
			want: `no Watch fan-out line can be computed: the page has no section "Watch fan-out" with a table`},
		{name: "the only stock run of a case removed",
			from: "| 13000 | 20/30 +failover +starts=9 | stock | 16.7 s |", to: "| 13000 | 20/30 +failover +starts=9 | ours-old | 16.7 s |",
			want: `no Failover line can be computed: the Failover table has no run of ours with a stock run of the same Services and run`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, tb := strings.Join(want, "\n"), tables
			if tc.inSummary {
				s = strings.Replace(s, tc.from, tc.to, 1)
			} else {
				tb = strings.Replace(tb, tc.from, tc.to, 1)
			}
			problems, err := Check(page(strings.Split(s, "\n"), tb))
			if err != nil {
				t.Fatal(err)
			}
			got := strings.Join(problems, "\n")
			if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) || len(problems) > 1 {
				t.Errorf("Check: %q, want %q", got, tc.want)
			}
		})
	}
}

// A table that lacks a column a case quotes, or a cell that does not parse, is an error naming it.
func TestFromTablesNamesWhatItCannotRead(t *testing.T) {
	for _, tc := range []struct{ name, from, to, want string }{
		{"a column renamed", "| MB sent |", "| megabytes |", `the Watch fan-out table has no column "MB sent"`},
		{"the slow column renamed", "| over 1 s |", "| slow |", `the Watch fan-out table has no column "over N s"`},
		{"Services not a number", "| 30000 | 20/30 +failover | patched |", "| many | 20/30 +failover | patched |", `a row's Services is "many"`},
		{"a failed cell", "| 669 | 3 x 504 Timeout, 2 x EOF |", "| 669 | timeouts |", `the Watch fan-out table's stock row failed: failed "timeouts"`},
		{"a count", "| 12942 of 12900 |", "| many of 12900 |", `the Failover table's stock row startup writes: "many of 12900" does not begin with a count`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(tables, tc.from) {
				t.Fatalf("the fixture has no %q", tc.from)
			}
			_, err := FromTables(Tables(strings.Replace(tables, tc.from, tc.to, 1)))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("FromTables: %v, want an error saying %q", err, tc.want)
			}
		})
	}
}

// The summary ends at the page's "- Machine:" line; bullets of a glossary further down are not it.
func TestLinesStopAtTheMachineLine(t *testing.T) {
	got := Lines("# B\n\n- **Resync.** a\n- **Failover.** b\n\n- Machine: x\n\n- **kcm exits** c\n")
	if want := []string{"- **Resync.** a", "- **Failover.** b"}; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("Lines: %q, want %q", got, want)
	}
	if got := Lines("# B\n\n- Machine: x\n\n- **kcm exits** c\n"); got != nil {
		t.Errorf("Lines of a page without a summary: %q, want none", got)
	}
}

// A separator written with spaces (| --- |) is not a row, and a table in fenced code is not read.
func TestTablesSkipsSeparatorsAndFencedCode(t *testing.T) {
	page := "## Resync\n\n```\n| Services | run |\n```\n\n| Services | run | build |\n| --- | :---: | ---: |\n| 2000 | 20/30 | stock |\n"
	table := Tables(page)["Resync"]
	if table == nil || len(table.Rows) != 1 || table.Rows[0]["build"] != "stock" {
		t.Errorf("Tables: %+v, want the one row of the table outside the fence", table)
	}
}

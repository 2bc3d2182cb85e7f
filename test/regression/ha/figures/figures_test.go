package figures

import (
	"strings"
	"testing"
)

func TestTable(t *testing.T) {
	for _, tc := range []struct {
		name, tsv, want, wantErr string
	}{
		{name: "a line with more figures and one without",
			tsv: "VIP moves\tpatched\trecovery 46.1s\tleaders kcm-0 -> kcm-2\tlive Endpoints lost 0\tdual writes 0\n" +
				"compaction\tstock\trecovery 1.3s\tleaders kcm-0\tlive Endpoints lost 0\tdual writes 0\tLISTs answered 410 0\tLISTs to etcd 0\n",
			want: "| scenario | build | recovery | leaders | live Endpoints lost | dual writes | more |\n" +
				"|---|---|---|---|---|---|---|\n" +
				"| VIP moves | patched | 46.1s | kcm-0 -> kcm-2 | 0 | 0 |  |\n" +
				"| compaction | stock | 1.3s | kcm-0 | 0 | 0 | LISTs answered 410 0; LISTs to etcd 0 |\n"},
		{name: "too few fields", tsv: "VIP moves\tpatched\trecovery 46.1s\n", wantErr: "line 1 has 3 fields, want at least 6"},
		{name: "a field out of place", tsv: "VIP moves\tpatched\tleaders kcm-0\trecovery 1s\tlive Endpoints lost 0\tdual writes 0\n",
			wantErr: `line 1: field 3 is "leaders kcm-0", want "recovery" followed by its value`},
		{name: "nothing", tsv: "\n", wantErr: "no figures lines"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Faults.Table(tc.tsv)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("Table: %v, want an error saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("Table: %v\n%s\nwant:\n%s", err, got, tc.want)
			}
		})
	}
}

func TestReplaceKeepsThePageAroundTheBlock(t *testing.T) {
	page := "# HA\n\n" + Faults.Start + "\n| old |\n" + Faults.End + "\n\nAfter.\n"
	got, err := Faults.Replace(page, "| new |\n")
	if want := "# HA\n\n" + Faults.Start + "\n| new |\n" + Faults.End + "\n\nAfter.\n"; err != nil || got != want {
		t.Errorf("Replace: %v\n%q\nwant\n%q", err, got, want)
	}
	if _, err := Faults.Replace("# HA without markers\n", "| new |\n"); err == nil || !strings.Contains(err.Error(), "no figures block") {
		t.Errorf("Replace on a page without markers: %v, want an error naming the markers", err)
	}
}

func TestUpgradeTable(t *testing.T) {
	line := strings.Join([]string{"apply", "idc-lts-ha-1",
		Field("wall", "61.2s"), Field("kcm no leader (handovers)", "17.2s (1)"), Field("scheduler no leader (handovers)", "0.0s (0)"),
		Field("dual leaders", "0"), Field("Endpoints lag p50/p99/max (n)", "0.3s/21.3s/26.4s (83)"), Field("client failed/requests", "1/924"),
		"kcm idc-lts-ha-1 stock -> idc-lts-ha-2 ours 17.2s"}, "\t")
	want := "| step | master | wall | kcm no leader (handovers) | scheduler no leader (handovers) | dual leaders | Endpoints lag p50/p99/max (n) | client failed/requests | more |\n" +
		"|---|---|---|---|---|---|---|---|---|\n" +
		"| apply | idc-lts-ha-1 | 61.2s | 17.2s (1) | 0.0s (0) | 0 | 0.3s/21.3s/26.4s (83) | 1/924 | kcm idc-lts-ha-1 stock -> idc-lts-ha-2 ours 17.2s |\n"
	if got, err := Upgrade.Table(line + "\n"); err != nil || got != want {
		t.Errorf("Upgrade.Table: %v\n%s\nwant:\n%s", err, got, want)
	}
}

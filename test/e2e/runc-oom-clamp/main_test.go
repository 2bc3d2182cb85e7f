package main

import (
	"encoding/json"
	"testing"
)

func TestGrantable(t *testing.T) {
	all := uint64(1)<<41 - 1
	noSysResource := all &^ (1 << 24) // this workplace's machines
	for _, tc := range []struct {
		name        string
		caps        string
		bounding    uint64
		want        string
		wantDropped bool
	}{
		{"all grantable", `{"bounding":["CAP_SYS_RESOURCE","CAP_NET_ADMIN"]}`, all, `{"bounding":["CAP_SYS_RESOURCE","CAP_NET_ADMIN"]}`, false},
		{"dropped from every set", `{"bounding":["CAP_SYS_RESOURCE","CAP_NET_ADMIN"],"effective":["CAP_SYS_RESOURCE"]}`, noSysResource,
			`{"bounding":["CAP_NET_ADMIN"],"effective":[]}`, true},
		{"a name the table does not know is left to runc", `{"permitted":["CAP_FUTURE"]}`, noSysResource, `{"permitted":["CAP_FUTURE"]}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, dropped, err := grantable(json.RawMessage(tc.caps), tc.bounding)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want || dropped != tc.wantDropped {
				t.Errorf("grantable(%s) = %s, %t; want %s, %t", tc.caps, got, dropped, tc.want, tc.wantDropped)
			}
		})
	}
	if _, _, err := grantable(json.RawMessage(`["CAP_CHOWN"]`), all); err == nil {
		t.Error("capabilities that are not sets of names should be refused")
	}
}

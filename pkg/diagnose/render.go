package diagnose

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// WriteJSON writes the report for a fleet's tooling.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteText writes the report for a person: what runs, a line per finding, then each finding
// that is not ok in full.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "cpswap diagnose: %s watched for %v, read-only: %d requests, at most %v/s\n\n", r.Server, r.Window, r.Requests, r.QPS)

	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "COMPONENT\tNODE\tVERSION\tOURS\tDIGEST")
	for _, in := range r.Instances {
		ours := "no"
		if in.Ours {
			ours = "yes"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", in.Component, in.Node, orDash(in.Version), ours, orDash(digestOf(in.ImageID)))
	}
	if len(r.Instances) == 0 {
		fmt.Fprintln(tw, "(no control-plane static pods found)\t\t\t\t")
	}
	_ = tw.Flush()

	fmt.Fprintln(&b)
	tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "FINDING\tSTATUS\tSEEN")
	for _, f := range r.Findings {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", f.ID, strings.ToUpper(f.Severity.String()), f.Seen)
	}
	_ = tw.Flush()

	for _, f := range r.Findings {
		if f.Severity == OK {
			continue
		}
		fmt.Fprintf(&b, "\n[%s] %s\n", strings.ToUpper(f.Severity.String()), f.Title)
		fmt.Fprintf(&b, "  seen:     %s\n", f.Seen)
		for _, e := range f.Evidence {
			fmt.Fprintf(&b, "  evidence: %s\n", e)
		}
		fmt.Fprintf(&b, "  means:    %s\n", f.Meaning)
		if f.Fix != "" {
			fmt.Fprintf(&b, "  fix:      %s\n", f.Fix)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// digestOf returns the sha256 of a kubelet-reported image ID (docker-pullable://repo@sha256:...,
// or sha256:... for an image loaded without a registry), shortened for the table.
func digestOf(imageID string) string {
	i := strings.LastIndex(imageID, "sha256:")
	if i < 0 {
		return ""
	}
	d := imageID[i:]
	if len(d) > len("sha256:")+12 {
		d = d[:len("sha256:")+12]
	}
	return d
}

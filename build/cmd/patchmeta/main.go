// Command patchmeta reads and checks the patches' provenance headers for the pipeline's scripts
// (build/patchmeta defines them):
//
//	patchmeta check [-pipeline-author "Name <email>"] PATCH...   one line per problem; exit 1 if any
//	patchmeta field PATCH NAME                                  every value of a field, one a line
//	patchmeta notes -series FILE -version V -upstream V -go V -commit SHA   RELEASE_NOTES.md
//	patchmeta template                                          hack/patch-message.template
//	patchmeta readme [-series FILE] [-update README]            the README's patch table (or rewrite it in README)
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/idc-lts/kube-1.17/build/patchmeta"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch verb, args := os.Args[1], os.Args[2:]; verb {
	case "check":
		err = check(args)
	case "field":
		err = field(args)
	case "notes":
		err = notes(args)
	case "template":
		fmt.Print(patchmeta.Template())
	case "readme":
		err = readme(args)
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "patchmeta: %v\n", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: patchmeta check [-pipeline-author A] PATCH... | field PATCH NAME | notes -series FILE -version V -upstream V -go V -commit SHA | template | readme [-series FILE] [-update README]")
	os.Exit(2)
}

func check(args []string) error {
	flags := flag.NewFlagSet("check", flag.ExitOnError)
	author := flags.String("pipeline-author", "", "the pipeline's identity, which a ported patch must not name as its author")
	flags.Parse(args)
	problems := 0
	for _, path := range flags.Args() {
		p, err := patchmeta.Parse(path)
		if err != nil {
			// Reported like any other problem: the scripts read problems from stdout.
			fmt.Printf("%s: cannot be read as a patch: %v\n", filepath.Base(path), err)
			problems++
			continue
		}
		for _, problem := range p.Problems(*author) {
			fmt.Println(problem)
			problems++
		}
	}
	if problems > 0 {
		os.Exit(1)
	}
	return nil
}

func field(args []string) error {
	if len(args) != 2 {
		usage()
	}
	if _, ok := patchmeta.FieldNamed(args[1]); !ok {
		return fmt.Errorf("no field %s", args[1])
	}
	p, err := patchmeta.Parse(args[0])
	if err != nil {
		return err
	}
	for _, v := range p.Values(args[1]) {
		fmt.Println(v)
	}
	return nil
}

// seriesPatches parses every patch the series file lists (they are beside it).
func seriesPatches(series string) ([]*patchmeta.Patch, error) {
	names, err := patchmeta.ReadSeries(series)
	if err != nil {
		return nil, err
	}
	var patches []*patchmeta.Patch
	for _, name := range names {
		p, err := patchmeta.Parse(filepath.Join(filepath.Dir(series), name))
		if err != nil {
			return nil, err
		}
		patches = append(patches, p)
	}
	return patches, nil
}

func readme(args []string) error {
	flags := flag.NewFlagSet("readme", flag.ExitOnError)
	series := flags.String("series", "patches/series", "the series file; patches are beside it")
	update := flags.String("update", "", "README to rewrite the table of, between its markers (print the table if empty)")
	flags.Parse(args)
	patches, err := seriesPatches(*series)
	if err != nil {
		return err
	}
	var table strings.Builder
	if err := patchmeta.WriteReadmeTable(&table, patches); err != nil {
		return err
	}
	if *update == "" {
		fmt.Print(table.String())
		return nil
	}
	data, err := os.ReadFile(*update)
	if err != nil {
		return err
	}
	text := string(data)
	start, end := strings.Index(text, patchmeta.ReadmeTableStart+"\n"), strings.Index(text, patchmeta.ReadmeTableEnd)
	if start < 0 || end < start {
		return fmt.Errorf("%s has no patch table block (%q ... %q)", *update, patchmeta.ReadmeTableStart, patchmeta.ReadmeTableEnd)
	}
	start += len(patchmeta.ReadmeTableStart) + 1
	return os.WriteFile(*update, []byte(text[:start]+table.String()+text[end:]), 0o644)
}

func notes(args []string) error {
	flags := flag.NewFlagSet("notes", flag.ExitOnError)
	series := flags.String("series", "patches/series", "the series file; patches are beside it")
	var r patchmeta.Release
	flags.StringVar(&r.Version, "version", "", "release version")
	flags.StringVar(&r.Upstream, "upstream", "", "upstream version of the base")
	flags.StringVar(&r.GoToolchain, "go", "", "Go toolchain")
	flags.StringVar(&r.SeriesCommit, "commit", "", "commit of the applied series")
	flags.Parse(args)
	names, err := patchmeta.ReadSeries(*series)
	if err != nil {
		return err
	}
	var patches []*patchmeta.Patch
	for _, name := range names {
		p, err := patchmeta.Parse(filepath.Join(filepath.Dir(*series), name))
		if err != nil {
			return err
		}
		patches = append(patches, p)
	}
	return patchmeta.WriteNotes(os.Stdout, r, patches)
}

// Package cflow_test holds the module-wide checks that belong to no one
// package: today, that the import graph is the one docs/DESIGN.md draws.
package cflow_test

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/cflow-dev/cflow"

// anyAbove is the dependency list of a package that may import every
// package on an earlier line of the table (the CLI).
const anyAbove = "everything above"

// nothingOurs is the dependency list of a package that imports none of ours.
const nothingOurs = "(nothing of ours)"

// designRow is one line of DESIGN's "Who imports whom" table.
type designRow struct {
	line     int             // its position in the table, for "arrows point down"
	deps     map[string]bool // the packages of ours it may import
	anyAbove bool            // it may import anything listed before it
}

// TestImportGraphMatchesDesign holds the module to docs/DESIGN.md's "Who
// imports whom": every package of ours (commands under bench/ and scripts/
// included) has a line there, every import between our packages is on its
// importer's line and every package a line names is imported, and every
// import points up the table (a package's line
// comes after the lines of everything it imports). Only non-test imports
// count: tests may reach further for their truth (engine's tests convert
// fixtures). Packages made only of tests (this one) are not listed.
//
// The table's format, so it stays easy to edit: inside the section's first
// ``` block, one line per package, its import path relative to the module,
// then the packages of ours it imports separated by spaces; "(nothing of
// ours)" or "everything above" instead of a list; three or more spaces end
// the list and start a comment.
func TestImportGraphMatchesDesign(t *testing.T) {
	table, err := readImportTable("docs/DESIGN.md")
	if err != nil {
		t.Fatal(err)
	}
	graph, err := listImports()
	if err != nil {
		t.Fatal(err)
	}
	var pkgs []string
	for p := range graph {
		pkgs = append(pkgs, p)
	}
	sort.Strings(pkgs)
	for _, p := range pkgs {
		row, ok := table[p]
		if !ok {
			t.Errorf("%s is not in docs/DESIGN.md's \"Who imports whom\" table: add a line %q listing what of ours it imports", p, p+"   "+strings.Join(graph[p], " "))
			continue
		}
		for _, d := range graph[p] {
			dep, listed := table[d]
			switch {
			case !listed:
				// Reported on d's own line above.
			case !row.anyAbove && !row.deps[d]:
				t.Errorf("%s imports %s, which its line in docs/DESIGN.md's \"Who imports whom\" does not list: add it there (keeping the table true) or drop the import", p, d)
			case dep.line > row.line:
				t.Errorf("%s imports %s, which docs/DESIGN.md's \"Who imports whom\" lists below it: arrows point down, so move %s's line above %s's", p, d, d, p)
			}
		}
	}
	for p, row := range table {
		if _, ok := graph[p]; !ok {
			t.Errorf("docs/DESIGN.md's \"Who imports whom\" lists %s, which is not a package of this module (go list ./...): drop or rename its line", p)
		}
		for d := range row.deps {
			if _, ok := table[d]; !ok {
				t.Errorf("docs/DESIGN.md's \"Who imports whom\" line for %s names %s, which has no line of its own", p, d)
			} else if imports, ok := graph[p]; ok && !slices.Contains(imports, d) {
				t.Errorf("docs/DESIGN.md's \"Who imports whom\" says %s imports %s, which it does not: drop %s from its line", p, d, d)
			}
		}
	}
}

// readImportTable parses the first code block under "## Who imports whom".
func readImportTable(path string) (map[string]designRow, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	table := map[string]designRow{}
	section, inBlock, done := false, false, false
	n := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() && !done {
		text := sc.Text()
		switch {
		case strings.HasPrefix(text, "## "):
			section = text == "## Who imports whom"
		case section && strings.HasPrefix(text, "```"):
			done = inBlock
			inBlock = !inBlock
		case inBlock && strings.TrimSpace(text) != "":
			pkg, deps, err := parseImportLine(text)
			if err != nil {
				return nil, fmt.Errorf("%s, \"Who imports whom\": %v", path, err)
			}
			if _, dup := table[pkg]; dup {
				return nil, fmt.Errorf("%s, \"Who imports whom\": %s has two lines", path, pkg)
			}
			n++
			row := designRow{line: n, deps: map[string]bool{}}
			switch deps {
			case anyAbove:
				row.anyAbove = true
			case nothingOurs:
			default:
				for _, d := range strings.Fields(deps) {
					row.deps[d] = true
				}
			}
			table[pkg] = row
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if !done {
		return nil, fmt.Errorf("%s: no closed code block under \"## Who imports whom\"", path)
	}
	return table, nil
}

// parseImportLine splits "pkg   dep dep   comment" into the package and its
// dependency list (a comment starts at the first run of three spaces after
// the list).
func parseImportLine(text string) (pkg, deps string, err error) {
	pkg, rest, ok := strings.Cut(strings.TrimSpace(text), " ")
	if !ok {
		return "", "", fmt.Errorf("line %q has no dependency list (write %q when it imports none of ours)", text, nothingOurs)
	}
	rest = strings.TrimLeft(rest, " ")
	if i := strings.Index(rest, "   "); i >= 0 {
		rest = rest[:i]
	}
	return pkg, strings.TrimSpace(rest), nil
}

// listImports asks the go command for every package of the module that has
// non-test files, and the packages of ours each imports.
func listImports() (map[string][]string, error) {
	cmd := exec.Command("go", "list", "-f", "{{if .GoFiles}}{{.ImportPath}} {{join .Imports \" \"}}{{end}}", "./...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list ./...: %v\n%s", err, stderr.String())
	}
	graph := map[string][]string{}
	for _, line := range strings.Split(string(out), "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		pkg, ok := ours(fields[0])
		if !ok {
			return nil, fmt.Errorf("go list ./... named %s, outside %s", fields[0], module)
		}
		deps := []string{}
		for _, imp := range fields[1:] {
			if d, ok := ours(imp); ok {
				deps = append(deps, d)
			}
		}
		graph[pkg] = deps
	}
	return graph, nil
}

// ours returns an import path relative to the module, or false when it is
// not one of the module's packages.
func ours(path string) (string, bool) {
	rel, ok := strings.CutPrefix(path, module+"/")
	return rel, ok
}

package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// maxFuncLines bounds a function of the CLI: cmd/cflowc is flags and
// printing (docs/DESIGN.md), so a longer body is logic that belongs in a
// package of its own.
const maxFuncLines = 60

// TestCLIFunctionsAreShort fails on any function of this command, tests
// aside, longer than maxFuncLines (from its func line to its closing
// brace).
func TestCLIFunctionsAreShort(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("no Go files: %v", err)
	}
	fs := token.NewFileSet()
	checked := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fs, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range af.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			checked++
			if n := fs.Position(fd.Body.Rbrace).Line - fs.Position(fd.Pos()).Line + 1; n > maxFuncLines {
				t.Errorf("%s: %s is %d lines (at most %d: move the logic into a package)", f, fd.Name.Name, n, maxFuncLines)
			}
		}
	}
	if checked < 50 {
		t.Fatalf("only %d functions checked: wrong directory?", checked)
	}
}

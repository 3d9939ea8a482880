package main

import (
	"bytes"
	"encoding/xml"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const results = `{"engine":"cflowc","test":"tg","round":1,"threads":1,"tok_s":10,"roofline_tok_s":20}
{"engine":"cflowc","test":"tg","round":2,"threads":1,"tok_s":12,"roofline_tok_s":22}
{"engine":"llama.cpp","test":"tg","round":1,"threads":1,"tok_s":9}
{"engine":"cflowc","test":"pp","round":1,"threads":1,"tok_s":100}
{"engine":"cflowc","test":"tg","round":1,"threads":2,"tok_s":18,"roofline_tok_s":30}
`

func plotRun(t *testing.T, args ...string) (int, string) {
	t.Helper()
	var stderr bytes.Buffer
	code := run(args, io.Discard, &stderr)
	return code, stderr.String()
}

// TestPlotWrites: the SVG is well-formed XML, carries the medians (11
// tok/s for cflowc at one thread over rounds 10 and 12) and the escaped
// title, and the sink leaves nothing else in the directory.
func TestPlotWrites(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "results.jsonl")
	os.WriteFile(in, []byte(results), 0o644)
	out := filepath.Join(dir, "plot.svg")
	if code, msg := plotRun(t, "-in", in, "-o", out, "-title", "a < b & c"); code != 0 {
		t.Fatalf("exit %d: %s", code, msg)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	d := xml.NewDecoder(bytes.NewReader(b))
	for {
		if _, err := d.Token(); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("not well-formed SVG: %v", err)
		}
	}
	for _, want := range []string{">11.0<", "a &lt; b &amp; c"} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("SVG lacks %q", want)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 2 {
		t.Errorf("%d entries in the directory, want the input and the plot", len(ents))
	}
}

// TestPlotRefuses (issue 19 item 2): an output that is the input (by
// name or through a link) is refused before anything is written, as are
// an output in a missing directory, a directory as output or input, a
// missing input and rows with impossible values: exit 2, a message naming
// the problem, the input unchanged and no output file.
func TestPlotRefuses(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "results.jsonl")
	os.WriteFile(in, []byte(results), 0o644)
	link := filepath.Join(dir, "link.svg")
	if err := os.Link(in, link); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.jsonl")
	os.WriteFile(bad, []byte(`{"engine":"cflowc","threads":0,"tok_s":5}`+"\n"), 0o644)
	neg := filepath.Join(dir, "neg.jsonl")
	os.WriteFile(neg, []byte(`{"engine":"cflowc","threads":1,"tok_s":-5}`+"\n"), 0o644)
	zero := filepath.Join(dir, "zero.jsonl")
	os.WriteFile(zero, []byte(`{"engine":"cflowc","threads":1,"tok_s":0}`+"\n"), 0o644)
	out := filepath.Join(dir, "out.svg")
	cases := []struct {
		name, in, out, want string
	}{
		{"output is the input", in, in, "same file"},
		{"output is a link to the input", in, link, "same file"},
		{"output in a missing directory", in, filepath.Join(dir, "nope", "x.svg"), "no such file or directory"},
		{"output is a directory", in, dir, "directory"},
		{"input is missing", filepath.Join(dir, "missing.jsonl"), out, "missing.jsonl"},
		{"input is a directory", dir, out, "is a directory"},
		{"zero threads", bad, out, "threads 0"},
		{"negative rate", neg, out, "tok_s -5"},
		{"no positive rate", zero, out, "no decode results"},
	}
	for _, c := range cases {
		code, msg := plotRun(t, "-in", c.in, "-o", c.out)
		if code != 2 || !strings.Contains(msg, c.want) {
			t.Errorf("%s: exit %d, message %q: want 2 and %q", c.name, code, msg, c.want)
		}
		if b, _ := os.ReadFile(in); string(b) != results {
			t.Fatalf("%s: the input was changed", c.name)
		}
		if _, err := os.Stat(out); err == nil {
			t.Fatalf("%s: an output file was written", c.name)
		}
	}
	if code, _ := plotRun(t, "-bogus"); code != 2 {
		t.Errorf("unknown flag: exit %d, want 2", code)
	}
}

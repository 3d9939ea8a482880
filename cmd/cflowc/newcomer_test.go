package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNewcomerBadArguments: the README's commands given what a newcomer
// mistypes — a directory where a model file goes, absurd counts, a flag
// that needs another, an unknown subcommand, an output in a missing
// directory, an endless file — each exit 2 (never 3, never a crash or a
// hang) with one line naming the problem, and write nothing.
func TestNewcomerBadArguments(t *testing.T) {
	dir := t.TempDir()
	model := smallModel(t, dir) // context 64
	out := filepath.Join(dir, "out")
	list := filepath.Join(dir, "list.json")
	os.WriteFile(list, []byte("[]"), 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		// A directory given as the model file was "too short to hold a
		// magic number".
		{[]string{"run", dir, "--prompt-ids", "1"}, dir + " is a directory"},
		{[]string{"inspect", dir}, dir + " is a directory"},
		{[]string{"analyze", dir}, dir + " is a directory"},
		{[]string{"export", "gguf", dir, "-o", out + ".gguf"}, dir + " is a directory"},
		// Past the context in the prompt test: exit 3 and "bench: bench:".
		{[]string{"bench", model, "--prompt", "100000", "--tokens", "0"}, "bench: --prompt 100000 exceeds the model's context of 64"},
		{[]string{"bench", model, "--tokens", "-1"}, "--tokens -1: must be ≥ 0"},
		{[]string{"bench", model, "--parallel", "0"}, "--parallel 0 outside 1..64"},
		{[]string{"bench", model, "--parallel", "9", "--batch", "8"}, "--parallel 9 outside 1..8"},
		{[]string{"bench", model, "--prompt", "-1"}, "--prompt -1: must be ≥ 0"},
		// Endless: ran for hours.
		{[]string{"bench", model, "--runs", "100000000"}, "--runs 100000000 outside 1..1000"},
		{[]string{"bench", model, "--probe-runs", "100000000"}, "--probe-runs 100000000 outside 1..1000"},
		// A JSON file that is not a trace: "cannot unmarshal array into Go
		// value of type trace.Trace".
		{[]string{"verify", model, "--trace", list}, "list.json: not a trace (a JSON object, docs/TRACE.md)"},
		// An empty stop string was shown as "--stop []".
		{[]string{"run", model, "--prompt-ids", "1", "--stop", "x", "--stop", ""}, `--stop ["x" ""]: `},
		// Ignored without a word.
		{[]string{"run", model, "--prompt-ids", "1", "--system", "be brief"}, "--system applies to --chat"},
		// Unknown subcommands exited 3 ("No help topic") or blamed -o.
		{[]string{"dev", "bogus"}, `dev: unknown command "bogus" (commands: synth, synth-moe`},
		{[]string{"export", "bogus", model, "-o", out + ".gguf"}, `export: unknown command "bogus" (commands: gguf`},
		// Two files: the message said "flags first".
		{[]string{"export", "gguf", model, model, "-o", out + ".gguf"}, "give one FILE (got 2)"},
		// dev synth made missing parent directories, took --shards 0 and
		// -1 as 1, and wrote 100,000 empty shards.
		{[]string{"dev", "synth", "--geometry", "tiny", "-o", filepath.Join(dir, "nodir", "ck")}, "nodir: no such file or directory"},
		{[]string{"dev", "synth", "--geometry", "tiny", "-o", out, "--shards", "0"}, "--shards 0 outside 1..1024"},
		{[]string{"dev", "synth", "--geometry", "tiny", "-o", out, "--shards", "100000"}, "--shards 100000 outside 1..1024"},
		{[]string{"dev", "synth", "--geometry", "tiny", "-o", model}, "is not a directory"},
		// More shards than the tiny geometry's 21 tensors wrote empty
		// shard files.
		{[]string{"dev", "synth", "--geometry", "tiny", "-o", out, "--shards", "22"}, "--shards: more shards than tensors: 22 shards for a checkpoint of 21 tensors (at most 21"},
		// An endless tokenizer file was read whole until the kernel's OOM
		// killer stopped the process.
		{[]string{"convert", "-o", out + ".cflow", "--tokenizer", "/dev/zero", "../../models/stories260K.bin"}, "/dev/zero: larger than 256 MiB"},
		{[]string{"convert", "-o", out + ".cflow", "--tokenizer", dir, "../../models/stories260K.bin"}, dir + " is a directory"},
	} {
		var stderr bytes.Buffer
		code := runMain(append([]string{"cflowc"}, c.args...), &stderr)
		msg := stderr.String()
		if code != exitUsage || !strings.Contains(msg, c.want) || strings.Count(msg, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and one line with %q", c.args, code, msg, c.want)
		}
		for _, p := range []string{out, out + ".gguf", out + ".cflow"} {
			if _, err := os.Stat(p); err == nil {
				t.Fatalf("%v: wrote %s", c.args, p)
			}
		}
	}
}

package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cflow-dev/cflow/archspec"
	"github.com/cflow-dev/cflow/cflowfmt"
	"github.com/cflow-dev/cflow/cflowfmt/fmttest"
	"github.com/cflow-dev/cflow/convert"
	"github.com/cflow-dev/cflow/engine"
	"github.com/cflow-dev/cflow/gguf"
	"github.com/cflow-dev/cflow/internal/fileio"
	"github.com/cflow-dev/cflow/quant"
	"github.com/cflow-dev/cflow/trace"
	"github.com/cflow-dev/cflow/verify"
	"github.com/cflow-dev/cflow/vflowfmt"
)

// TestCheckRefusesWhatRunRefuses (issue 19 items 1, 3, 4): every crafted
// file fails inspect --check with exit 1; those the loaders refuse make run,
// verify, bench and analyze exit 2 with an error instead of dying of out of
// memory in the plan (block_iterations 0xFFFFFFFF) or decoding garbage.
func TestCheckRefusesWhatRunRefuses(t *testing.T) {
	dir := t.TempDir()
	files, err := fmttest.CraftedFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	// A malformed embedded tokenizer.json: the writer stores it, run refuses it.
	s := fmttest.Tiny(quant.F32, false, false)
	s.Header.VocabSize = 300
	s.Meta.SetString(cflowfmt.KeyTokenizerKind, "hf-bpe")
	s.Meta.SetBytes(cflowfmt.KeyTokenizerData, []byte(`{"model": {"type": "BPE", "vocab": [`))
	tokPath := filepath.Join(dir, "bad_tokenizer.cflow")
	if _, err := fmttest.WriteCflow(tokPath, s, nil); err != nil {
		t.Fatal(err)
	}
	refusedByLoaders := map[string]bool{"block_iterations_0xffffffff": true, "prenorm_dense_delay_255": true,
		"partial_rotary_factor_10": true, "bad_tokenizer": true}
	paths := map[string]string{"bad_tokenizer": tokPath}
	for _, c := range files {
		p := filepath.Join(dir, c.Name+".cflow")
		if err := os.WriteFile(p, c.Data, 0o644); err != nil {
			t.Fatal(err)
		}
		paths[c.Name] = p
	}
	for name, p := range paths {
		if code := runApp("inspect", p, "--check"); code != exitFail {
			t.Errorf("%s: inspect --check exit %d, want %d", name, code, exitFail)
		}
		if !refusedByLoaders[name] {
			continue
		}
		if code := runApp("run", p, "--prompt-ids", "1", "--max-tokens", "1"); code != exitUsage {
			t.Errorf("%s: run exit %d, want %d", name, code, exitUsage)
		}
		if name == "bad_tokenizer" {
			continue // the tokenizer is run's and tokenize's business only
		}
		for _, args := range [][]string{{"bench", p, "--tokens", "1", "--runs", "1"}, {"analyze", p}} {
			if code := runApp(args...); code != exitUsage {
				t.Errorf("%s: %s exit %d, want %d", name, args[0], code, exitUsage)
			}
		}
	}
}

// copyFixture copies a golden fixture directory so a test can edit its
// config.
func copyFixture(t *testing.T, name string) string {
	t.Helper()
	src := filepath.Join("..", "..", "golden", "fixtures", name) // tests run in cmd/cflowc
	dst := filepath.Join(t.TempDir(), name)
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// editConfig rewrites one key of a fixture's config.json.
func editConfig(t *testing.T, dir, key string, v any) {
	t.Helper()
	p := filepath.Join(dir, "config.json")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	cfg[key] = v
	b, _ = json.Marshal(cfg)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestConvertBoundsIterations (item 1): block_iterations 2147483647 in a
// config is refused before anything is sized from it (convert used to grow
// past 7.6 GB), exit 2, no output file.
func TestConvertBoundsIterations(t *testing.T) {
	dir := copyFixture(t, "arch5_fixed_point")
	editConfig(t, dir, "block_iterations", 2147483647)
	out := filepath.Join(t.TempDir(), "m.cflow")
	if code := runApp("convert", "--quiet", "-o", out, dir); code != exitUsage {
		t.Fatalf("convert exit %d, want %d", code, exitUsage)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Fatalf("output exists after a refused conversion: %v", err)
	}
}

// smallModel writes a dense PreNorm F32 model (vocab 60) and returns its
// path.
func smallModel(t *testing.T, dir string) string {
	t.Helper()
	s := fmttest.Random(rand.New(rand.NewSource(4)), quant.F32)
	s.Header.CombineStyle, s.Header.DenseDelay, s.Header.ExpertDelay, s.Header.VocabSize = archspec.PreNorm, 0, 0, 60
	p := filepath.Join(dir, "m.cflow")
	if _, err := fmttest.WriteCflow(p, s, nil); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestOutputIsInputRefused (item 2): export gguf -o, run --trace-out and
// bench --cpuprofile naming the model itself (directly or through a
// symlink) exit 2 and leave the model byte-identical.
func TestOutputIsInputRefused(t *testing.T) {
	dir := t.TempDir()
	model := smallModel(t, dir)
	orig, _ := os.ReadFile(model)
	link := filepath.Join(dir, "link.cflow")
	if err := os.Symlink(model, link); err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{model, link} {
		for _, args := range [][]string{
			{"export", "gguf", model, "-o", out},
			{"run", model, "--prompt-ids", "1", "--max-tokens", "1", "--trace-out", out},
			{"bench", model, "--tokens", "1", "--runs", "1", "--warmup", "0", "--probe-mib", "1", "--probe-runs", "1", "--cpuprofile", out},
		} {
			if code := runApp(args...); code != exitUsage {
				t.Errorf("%v: exit %d, want %d", args, code, exitUsage)
			}
			if b, _ := os.ReadFile(model); !bytes.Equal(b, orig) {
				t.Fatalf("%v destroyed the model", args)
			}
		}
	}
	// The profile goes through the sink: present only after success.
	prof := filepath.Join(dir, "cpu.prof")
	if code := runApp("bench", model, "--tokens", "2", "--runs", "1", "--warmup", "0", "--probe-mib", "1", "--probe-runs", "1", "--cpuprofile", prof); code != 0 {
		t.Fatalf("bench with a profile: exit %d", code)
	}
	if st, err := os.Stat(prof); err != nil || st.Size() == 0 {
		t.Fatalf("profile missing: %v", err)
	}
	if tmps, _ := filepath.Glob(filepath.Join(dir, ".*.tmp*")); len(tmps) != 0 {
		t.Fatalf("temp files left: %v", tmps)
	}
}

// TestLateBadInputExitsTwo (item 6): bad input found after work started is
// still exit 2 — a corrupt expert tile parsed lazily (run, export), a trace
// longer than the context (verify), bench --tokens past the context, an
// unknown subcommand — never 3, the code for our own bugs.
func TestLateBadInputExitsTwo(t *testing.T) {
	dir := t.TempDir()
	s := fmttest.Tiny(quant.Q4_0, true, false)
	moe := filepath.Join(dir, "moe.cflow")
	tiles, err := fmttest.WriteCflow(moe, s, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(moe)
	for off, tl := range tiles {
		if tl.TH.Matrix.IsExpert() {
			b[off+12] = 0xEE // quant_group: every expert tile is now malformed
		}
	}
	os.WriteFile(moe, b, 0o644)
	if f, err := cflowfmt.Open(moe); err != nil {
		t.Fatalf("Open should not parse experts (they are read lazily): %v", err)
	} else {
		f.Close()
	}
	if code := runApp("run", moe, "--prompt-ids", "1", "--max-tokens", "2", "--temperature", "0"); code != exitUsage {
		t.Errorf("run with a corrupt expert: exit %d, want %d", code, exitUsage)
	}
	if code := runApp("export", "gguf", moe, "-o", filepath.Join(dir, "x.gguf")); code != exitUsage {
		t.Errorf("export with a corrupt expert: exit %d, want %d", code, exitUsage)
	}

	model := smallModel(t, dir)
	tracePath := filepath.Join(dir, "t.json")
	if code := runApp("run", model, "--prompt-ids", "1", "--max-tokens", "2", "--temperature", "0", "--trace-out", tracePath); code != 0 {
		t.Fatalf("run: exit %d", code)
	}
	var tr map[string]any
	tb, _ := os.ReadFile(tracePath)
	json.Unmarshal(tb, &tr)
	steps := tr["steps"].([]any)
	f, _ := cflowfmt.Open(model)
	ctx := int(f.Header.MaxSeqLen)
	f.Close()
	for len(steps) <= ctx {
		steps = append(steps, steps[len(steps)-1])
	}
	tr["steps"] = steps
	tb, _ = json.Marshal(tr)
	os.WriteFile(tracePath, tb, 0o644)
	if code := runApp("verify", model, "--trace", tracePath); code != exitUsage {
		t.Errorf("verify of a trace longer than the context: exit %d, want %d", code, exitUsage)
	}
	if code := runApp("bench", model, "--tokens", fmt.Sprint(ctx+1), "--runs", "1"); code != exitUsage {
		t.Errorf("bench --tokens past the context: exit %d, want %d", code, exitUsage)
	}
	var stderr bytes.Buffer
	if code := runMain([]string{"cflowc", "bogus"}, &stderr); code != exitUsage || !strings.Contains(stderr.String(), `unknown command "bogus"`) {
		t.Errorf("unknown command: exit %d, %q", code, stderr.String())
	}
}

// TestUsageErrorsOneLine: an unknown flag prints one line naming the
// command and a hint, not the help page (newcomer finding).
func TestUsageErrorsOneLine(t *testing.T) {
	for _, args := range [][]string{{"run", "--bogus", "x"}, {"dev", "synth", "--bogus"}, {"--bogus"}} {
		var stderr bytes.Buffer
		code := runMain(append([]string{"cflowc"}, args...), &stderr)
		out := stderr.String()
		if code != exitUsage || strings.Count(out, "\n") != 1 || !strings.Contains(out, "--help") || strings.Contains(out, "USAGE") {
			t.Errorf("%v: exit %d, stderr %q", args, code, out)
		}
	}
}

// TestUnboundedArgumentsRefused (item 8): endless or absurd arguments fail
// at once with an error naming the flag, exit 2.
func TestUnboundedArgumentsRefused(t *testing.T) {
	model := smallModel(t, t.TempDir())
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"verify", model, "--trace", "/dev/zero"}, "larger than"},
		{[]string{"tokenize", model, "--text", "/dev/zero", "--json"}, "larger than"},
		{[]string{"ppl", model, "--text", "/dev/zero"}, "larger than"},
		{[]string{"bench", model, "--probe-mib", "100000000"}, "--probe-mib 100000000 outside"},
		{[]string{"run", model, "--prompt-ids", "1", "--threads", "100000"}, "--threads 100000 outside"},
		{[]string{"run", model, "--prompt-ids", "1", "--threads", "0"}, "--threads 0 outside"},
		{[]string{"bench", model, "--threads", "0"}, "--threads 0 outside"},
		{[]string{"verify", model, "--trace", "/dev/null", "--threads", "-1"}, "--threads -1 outside"},
	} {
		var stderr bytes.Buffer
		if code := runMain(append([]string{"cflowc"}, c.args...), &stderr); code != exitUsage || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("%v: exit %d, stderr %q, want %q", c.args, code, stderr.String(), c.want)
		}
	}
}

// TestManAndCompletion: cflowc man prints a roff page naming every
// command; completion scripts exist for bash and zsh, and the completion
// protocol lists a command's flags.
func TestManAndCompletion(t *testing.T) {
	var out bytes.Buffer
	app := newApp()
	app.Writer = &out
	if err := app.Run([]string{"cflowc", "man"}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{".TH cflowc 1", "convert", "inspect", "verify", "completion"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("man page lacks %q", want)
		}
	}
	for _, sh := range []string{"bash", "zsh"} {
		out.Reset()
		app = newApp()
		app.Writer = &out
		if err := app.Run([]string{"cflowc", "completion", sh}); err != nil || !strings.Contains(out.String(), "--generate-bash-completion") {
			t.Errorf("completion %s: %v %q", sh, err, out.String())
		}
	}
	out.Reset()
	app = newApp()
	app.Writer = &out
	args := []string{"cflowc", "run", "-", "--generate-bash-completion"}
	defer func(a []string) { os.Args = a }(os.Args)
	os.Args = args // urfave/cli reads the word being completed from os.Args
	if err := app.Run(interspersed(args, app.Commands)); err != nil || !strings.Contains(out.String(), "--prompt-ids") {
		t.Errorf("flag completion for run: %v %q", err, out.String())
	}
}

// TestVerbPrefixOnce: a command's errors carry its own verb once
// (tokenize on a file without a tokenizer said "tokenize: ppl: …").
func TestVerbPrefixOnce(t *testing.T) {
	dir := t.TempDir()
	model := smallModel(t, dir)
	text := filepath.Join(dir, "t.txt")
	os.WriteFile(text, []byte("hello"), 0o644)
	for _, cmd := range []string{"tokenize", "ppl"} {
		var stderr bytes.Buffer
		code := runMain([]string{"cflowc", cmd, model, "--text", text}, &stderr)
		want := "cflowc: " + cmd + ": the model file has no tokenizer"
		if code != exitUsage || !strings.HasPrefix(stderr.String(), want) || strings.Contains(stderr.String(), cmd+": ppl:") {
			t.Errorf("%s: exit %d, stderr %q, want prefix %q", cmd, code, stderr.String(), want)
		}
	}
}

// TestNUMANodesBounded: --numa-nodes 999 (which doubled the file with
// replicated tiles) is refused, exit 2, no output.
func TestNUMANodesBounded(t *testing.T) {
	out := filepath.Join(t.TempDir(), "s.cflow")
	var stderr bytes.Buffer
	code := runMain([]string{"cflowc", "convert", "--numa-nodes", "999", "-o", out, storiesBin}, &stderr)
	if code != exitUsage || !strings.Contains(stderr.String(), "--numa-nodes 999 outside 1..64") {
		t.Fatalf("exit %d, %q", code, stderr.String())
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Fatal("output written")
	}
}

// TestInspectReadable (newcomer findings): the shard plan is one summary
// line in text (the JSON keeps it whole), a .vflow does not show the
// .cflow-only layout fields, and --json keys are all snake_case.
func TestInspectReadable(t *testing.T) {
	s := fmttest.Tiny(quant.Q4_0, true, false)
	s.Meta.SetBytes(cflowfmt.KeyNUMAPlan, []byte(`{"version":1,"nodes":2,"matrices":[{"layer":0,"matrix":"q","slot":0,"policy":"column","shards":[]},{"layer":0,"matrix":"o","slot":0,"policy":"row","shards":[]}],"experts":[{"layer":1,"node":0,"experts":[0,1]}]}`))
	cp, vp := writeBoth(t, s)
	var text bytes.Buffer
	if err := runInspect(&text, cp, false, false, true); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "2 node(s); 2 matrices (1 column, 1 row); experts split in 1 layers") {
		t.Errorf("no plan summary in:\n%s", text.String())
	}
	if !strings.Contains(text.String(), "per-layer weight checksums verified") {
		t.Errorf("check line does not mention checksums:\n%s", text.String())
	}
	text.Reset()
	if err := runInspect(&text, vp, false, false, false); err != nil {
		t.Fatal(err)
	}
	for _, field := range []string{"metadata_offset", "layer_table_offset"} {
		if strings.Contains(text.String(), field) {
			t.Errorf(".vflow text shows the .cflow-only %s", field)
		}
	}
	for _, p := range []string{cp, vp} {
		var js bytes.Buffer
		if err := runInspect(&js, p, true, true, true); err != nil {
			t.Fatal(err)
		}
		var v any
		if err := json.Unmarshal(js.Bytes(), &v); err != nil {
			t.Fatal(err)
		}
		var walk func(any)
		walk = func(v any) {
			switch x := v.(type) {
			case map[string]any:
				for k, e := range x {
					if strings.ToLower(k) != k || strings.Contains(k, " ") {
						t.Errorf("%s: JSON key %q is not snake_case", p, k)
					}
					walk(e)
				}
			case []any:
				for _, e := range x {
					walk(e)
				}
			}
		}
		walk(v)
		if hdr := v.(map[string]any)["header"].(map[string]any); (p == vp) == (hdr["layer_table_offset"] != nil) {
			t.Errorf("%s: layer_table_offset presence wrong: %v", p, hdr["layer_table_offset"])
		}
		if plan := v.(map[string]any)["shard_plan"]; plan == nil {
			t.Errorf("%s: --json lost the shard plan", p)
		}
	}
}

// TestProgressCallbacks: export gguf, dev synth and verify report progress
// (what their bars draw) monotonically up to the total.
func TestProgressCallbacks(t *testing.T) {
	dir := t.TempDir()
	type call struct{ done, total int64 }
	record := func(calls *[]call) func(done, total int64) {
		return func(d, n int64) { *calls = append(*calls, call{d, n}) }
	}
	check := func(what string, calls []call, total int64) {
		t.Helper()
		if len(calls) == 0 {
			t.Fatalf("%s: no progress reported", what)
		}
		for i := 1; i < len(calls); i++ {
			if calls[i].done < calls[i-1].done {
				t.Fatalf("%s: progress went back: %v", what, calls)
			}
		}
		if last := calls[len(calls)-1]; last.done != last.total || (total > 0 && last.total != total) {
			t.Fatalf("%s: last report %+v, want done = total = %d", what, last, total)
		}
	}
	var synth []call
	g := convert.Geometry{Hidden: 64, Layers: 2, Heads: 4, KVHeads: 2, FFN: 96, Vocab: 300}
	if err := convert.Synthesize(filepath.Join(dir, "syn"), convert.SynthOptions{Geometry: g, Seed: 3, Progress: record(&synth)}); err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(filepath.Join(dir, "syn", "model.safetensors"))
	if st == nil || synth[len(synth)-1].total > st.Size() || synth[len(synth)-1].total < st.Size()-4096 {
		t.Fatalf("synth total %v vs file %v", synth[len(synth)-1], st)
	}
	check("dev synth", synth, 0)

	model := filepath.Join(dir, "s.cflow")
	if code := runApp("convert", "--quiet", "--quant", "f32", "-o", model, storiesBin); code != 0 {
		t.Fatalf("convert exit %d", code)
	}
	m, err := vflowfmt.OpenModel(model)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	var exp []call
	if err := gguf.Write(m, filepath.Join(dir, "s.gguf"), gguf.Options{Progress: record(&exp)}); err != nil {
		t.Fatal(err)
	}
	check("export gguf", exp, 0)

	tracePath := filepath.Join(dir, "t.json")
	if code := runApp("run", model, "--prompt-ids", "1", "--max-tokens", "3", "--temperature", "0", "--trace-out", tracePath); code != 0 {
		t.Fatalf("run exit %d", code)
	}
	tr, err := trace.Load(tracePath)
	if err != nil {
		t.Fatal(err)
	}
	e, err := engine.New(m, engine.Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	rule, _ := verify.SelectRule(tr.Weights, m.Header.QuantType)
	var steps []call
	if _, err := verify.ReplayProgress(e, tr, rule, record(&steps)); err != nil {
		t.Fatal(err)
	}
	check("verify", steps, int64(len(tr.Steps)))
}

// TestEveryErrorNamesItsCommand: errors from any package reach the user
// as "cflowc: <command>: …" (several lacked the verb).
func TestEveryErrorNamesItsCommand(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nothere.cflow")
	for _, c := range []struct {
		args []string
		verb string
	}{
		{[]string{"export", "gguf", missing, "-o", missing + ".gguf"}, "export gguf"},
		{[]string{"run", missing, "--prompt-ids", "1"}, "run"},
		{[]string{"analyze", missing}, "analyze"},
		{[]string{"bench", missing}, "bench"},
		{[]string{"ppl", missing, "--text", missing}, "ppl"},
	} {
		var stderr bytes.Buffer
		runMain(append([]string{"cflowc"}, c.args...), &stderr)
		if !strings.HasPrefix(stderr.String(), "cflowc: "+c.verb+": ") || strings.Count(stderr.String(), c.verb+":") != 1 {
			t.Errorf("%v: %q, want one %q prefix", c.args, stderr.String(), c.verb+":")
		}
	}
}

// TestExportNoteOnce: export gguf's padded-row note is said once per
// tensor role, not once per layer.
func TestExportNoteOnce(t *testing.T) {
	got := paddedNotes([]string{"blk.0.ffn_down.weight", "blk.1.ffn_down.weight", "blk.2.ffn_down.weight", "token_embd.weight", "blk.0.attn_q.weight"})
	want := []string{"ffn_down.weight in 3 layers", "token_embd.weight", "attn_q.weight"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("notes %q, want %q", got, want)
	}
}

// TestExportTruncatedModel: a model truncated while export gguf reads it
// is a FaultError (exit 2 through lateExit), not a SIGBUS crash.
func TestExportTruncatedModel(t *testing.T) {
	dir := t.TempDir()
	model := filepath.Join(dir, "s.cflow")
	if code := runApp("convert", "--quiet", "--quant", "q8_0", "-o", model, storiesBin); code != 0 {
		t.Fatalf("convert exit %d", code)
	}
	m, err := vflowfmt.OpenModel(model)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if err := os.Truncate(model, 0); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "s.gguf")
	err = fileio.GuardFault(model, func() error { return gguf.Write(m, out, gguf.Options{}) })
	var fe *fileio.FaultError
	if !errors.As(err, &fe) {
		t.Fatalf("want a FaultError, got %v", err)
	}
	if code := exitCode(lateExit("export gguf", err)); code != exitUsage {
		t.Fatalf("exit %d, want %d", code, exitUsage)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Fatal("partial GGUF left behind")
	}
}

package main

import (
	"encoding/json"
	"errors"
	"math/rand"
	"os"
	"path/filepath"
	"testing"

	"github.com/cflow-dev/cflow/archspec"
	"github.com/cflow-dev/cflow/cflowfmt/fmttest"
	"github.com/cflow-dev/cflow/quant"
	"github.com/cflow-dev/cflow/trace"
	"github.com/urfave/cli/v2"
)

func runApp(args ...string) int {
	app := &cli.App{Name: "cflowc", Commands: commands, ExitErrHandler: func(*cli.Context, error) {}}
	err := app.Run(interspersed(append([]string{"cflowc"}, args...), commands))
	if err == nil {
		return 0
	}
	os.Stderr.WriteString("cflowc: " + err.Error() + "\n")
	var ec cli.ExitCoder
	if errors.As(err, &ec) {
		return ec.ExitCode()
	}
	return exitUsage
}

// TestRunTraceVerify: a greedy run's --trace-out verifies against the same
// file (exit 0), fails once a logit is moved by 0.5 (exit 1), and a file
// without a tokenizer refuses --prompt (exit 2).
func TestRunTraceVerify(t *testing.T) {
	s := fmttest.Random(rand.New(rand.NewSource(4)), quant.F32)
	s.Header.CombineStyle, s.Header.DenseDelay, s.Header.ExpertDelay, s.Header.VocabSize = archspec.PreNorm, 0, 0, 60
	dir := t.TempDir()
	model, tracePath := filepath.Join(dir, "m.cflow"), filepath.Join(dir, "t.json")
	if _, err := fmttest.WriteCflow(model, s, nil); err != nil {
		t.Fatal(err)
	}
	if code := runApp("run", model, "--prompt-ids", "1,2,3", "--temperature", "0", "--max-tokens", "4", "--threads", "2", "--trace-out", tracePath); code != 0 {
		t.Fatalf("run exit %d", code)
	}
	tr, err := trace.Load(tracePath)
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Generated) != 4 || len(tr.Steps) != 6 {
		t.Fatalf("trace has %d generated, %d steps; want 4 and 6", len(tr.Generated), len(tr.Steps))
	}
	for i := 3; i < 6; i++ {
		if tr.Generated[i-3] != tr.Steps[i-1].Argmax {
			t.Fatalf("greedy token %d = %d, argmax of the previous step %d", i-3, tr.Generated[i-3], tr.Steps[i-1].Argmax)
		}
	}
	if code := runApp("verify", model, "--trace", tracePath); code != 0 {
		t.Fatalf("verify of the run's own trace: exit %d", code)
	}
	tr.Steps[2].TopLogits[0] += 0.5
	b, _ := json.Marshal(tr)
	os.WriteFile(tracePath, b, 0o644)
	if code := runApp("verify", model, "--trace", tracePath); code != exitFail {
		t.Fatalf("verify of a perturbed trace: exit %d, want %d", code, exitFail)
	}
	if code := runApp("run", model, "--prompt", "hi"); code != exitUsage {
		t.Fatalf("--prompt without a tokenizer: exit %d, want %d", code, exitUsage)
	}
}

// TestRunRejectsSamplingValues: the silent cases — NaN temperature
// (used to return the last vocabulary id), negative temperature (greedy),
// top-p 2 (off) — and every other out-of-range sampling flag exit 2.
func TestRunRejectsSamplingValues(t *testing.T) {
	s := fmttest.Random(rand.New(rand.NewSource(4)), quant.F32)
	s.Header.CombineStyle, s.Header.DenseDelay, s.Header.ExpertDelay, s.Header.VocabSize = archspec.PreNorm, 0, 0, 60
	model := filepath.Join(t.TempDir(), "m.cflow")
	if _, err := fmttest.WriteCflow(model, s, nil); err != nil {
		t.Fatal(err)
	}
	for _, bad := range [][]string{
		{"--temperature", "NaN"}, {"--temperature", "-1"}, {"--temperature", "+Inf"}, {"--top-p", "2"},
		{"--top-p", "-0.5"}, {"--top-k", "-1"}, {"--min-p", "1.5"}, {"--repeat-penalty", "0"},
		{"--frequency-penalty", "NaN"}, {"--presence-penalty", "3"}, {"--repeat-last-n", "-2"}, {"--max-tokens", "0"},
	} {
		if code := runApp(append([]string{"run", model, "--prompt-ids", "1"}, bad...)...); code != exitUsage {
			t.Errorf("%v: exit %d, want %d", bad, code, exitUsage)
		}
	}
}

package verify

import (
	"bytes"
	"errors"
	"math/rand"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cflow-dev/cflow/archspec"
	"github.com/cflow-dev/cflow/cflowfmt"
	"github.com/cflow-dev/cflow/cflowfmt/fmttest"
	"github.com/cflow-dev/cflow/engine"
	"github.com/cflow-dev/cflow/quant"
	"github.com/cflow-dev/cflow/trace"
)

// smallModel writes a random .cflow with the formats' test generator and
// opens it with the real reader.
func smallModel(t *testing.T, q quant.Type) *engine.Engine {
	t.Helper()
	r := rand.New(rand.NewSource(4))
	s := fmttest.Random(r, q)
	s.Header.CombineStyle, s.Header.DenseDelay, s.Header.ExpertDelay = archspec.PreNorm, 0, 0
	s.Header.VocabSize = 60
	path := filepath.Join(t.TempDir(), "m.cflow")
	if _, err := fmttest.WriteCflow(path, s, nil); err != nil {
		t.Fatal(err)
	}
	f, err := cflowfmt.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	e, err := engine.New(f.Model, engine.Options{Threads: 1, Kernel: Kernel()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e
}

// record runs the engine over tokens and writes what it computed as a
// trace (weights "f32" for an F32 file).
func record(t *testing.T, e *engine.Engine, toks []int) *trace.Trace {
	tr := &trace.Trace{Schema: trace.Schema, Model: "m", Architecture: "m", Weights: "f32", Prompt: toks[:2], Generated: toks[2:]}
	for i, tok := range toks {
		logits, err := e.Step(tok)
		if err != nil {
			t.Fatal(err)
		}
		tr.Steps = append(tr.Steps, trace.Record(i, tok, e.Observation().ResidualNorms, e.Observation().PreLMHeadNorm, logits))
	}
	var buf bytes.Buffer
	if err := tr.Write(&buf); err != nil {
		t.Fatal(err)
	}
	return tr
}

// TestPerturbedLogitFails: a trace the runtime itself recorded passes; the
// same trace with one top logit moved by 0.5 fails (0.5 exceeds 1e-4 of any
// logit scale these models produce), and one with a different layer count
// or an id outside the vocabulary is refused as another model's.
func TestPerturbedLogitFails(t *testing.T) {
	e := smallModel(t, quant.F32)
	tr := record(t, e, []int{1, 2, 3, 4, 5})
	rep, err := Replay(e, tr, RuleF32())
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Pass {
		var b bytes.Buffer
		rep.WriteTable(&b)
		t.Fatalf("self-recorded trace fails:\n%s", b.String())
	}
	tr.Steps[3].TopLogits[5] += 0.5
	rep, err = Replay(e, tr, RuleF32())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Pass || rep.Steps[3].OK || !rep.Steps[2].OK {
		t.Fatalf("perturbed trace: pass=%v step3 ok=%v step2 ok=%v", rep.Pass, rep.Steps[3].OK, rep.Steps[2].OK)
	}
	if !strings.HasPrefix(rep.Verdict, "FAIL") {
		t.Fatalf("verdict %q", rep.Verdict)
	}
	tr.Steps[3].TopLogits[5] -= 0.5
	tr.Steps[1].ResidualNorms = append(tr.Steps[1].ResidualNorms, 1)
	if _, err := Replay(e, tr, RuleF32()); !errors.Is(err, ErrMismatch) {
		t.Fatalf("extra layer: %v, want ErrMismatch", err)
	}
	tr.Steps[1].ResidualNorms = tr.Steps[1].ResidualNorms[:len(tr.Steps[1].ResidualNorms)-1]
	tr.Steps[0].TopIDs[0] = 60
	if _, err := Replay(e, tr, RuleF32()); !errors.Is(err, ErrMismatch) {
		t.Fatalf("id outside vocab: %v, want ErrMismatch", err)
	}
}

func TestSelectRule(t *testing.T) {
	for _, c := range []struct {
		w    string
		q    quant.Type
		want string
	}{{"f32", quant.F32, RuleF32().Name}, {"q4_replay", quant.Q4_0, RuleReplay().Name}, {"q8_replay", quant.Q8_0, RuleReplay().Name},
		{"f32", quant.Q4_0, RuleQ4().Name}, {"f32", quant.Q8_0, RuleQ8().Name}, {"q4_replay", quant.F32, ""}} {
		r, err := SelectRule(c.w, c.q)
		if r.Name != c.want || (err != nil) != (c.want == "") {
			t.Fatalf("%s/%s: %q %v", c.w, c.q, r.Name, err)
		}
	}
}

package engine_test

import (
	"bytes"
	"math"
	"slices"
	"testing"

	"github.com/cflow-dev/cflow/cflowfmt"
	"github.com/cflow-dev/cflow/engine"
	"github.com/cflow-dev/cflow/engine/expertio"
	"github.com/cflow-dev/cflow/trace"
	"github.com/cflow-dev/cflow/verify"
	"github.com/cflow-dev/cflow/vflowfmt"
)

// armRun is everything one arm produced, token by token.
type armRun struct {
	logits [][]float32
	obs    []engine.Observation
	bytes  []engine.StreamBytes
	trace  []byte
	io     expertio.Stats
}

// runArm decodes tokens greedily after the prompt with one expert-I/O mode
// and records logits, observations, byte counts and the --trace-out JSON
// run would write.
func runArm(t *testing.T, m *cflowfmt.Model, mode expertio.Mode, threads int, prompt []int, n int) armRun {
	t.Helper()
	e, err := engine.New(m, engine.Options{Threads: threads, ExpertIO: mode, Kernel: verify.Kernel()})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	tr := &trace.Trace{Schema: trace.Schema, Model: "m", Prompt: prompt, Generated: []int{}}
	var r armRun
	step := func(tok int) []float32 {
		pos := e.Pos()
		logits, err := e.Step(tok)
		if err != nil {
			t.Fatalf("%s: step %d: %v", mode, pos, err)
		}
		tr.Steps = append(tr.Steps, trace.Record(pos, tok, e.Observation().ResidualNorms, e.Observation().PreLMHeadNorm, logits))
		o := e.Observation()
		r.logits = append(r.logits, slices.Clone(logits))
		cp := engine.Observation{ResidualNorms: slices.Clone(o.ResidualNorms), PreLMHeadNorm: o.PreLMHeadNorm}
		for _, s := range o.Experts {
			cp.Experts = append(cp.Experts, slices.Clone(s))
		}
		r.obs = append(r.obs, cp)
		r.bytes = append(r.bytes, e.Stats().Last)
		return logits
	}
	var logits []float32
	for _, tok := range prompt {
		logits = step(tok)
	}
	for i := 0; i < n; i++ {
		next := trace.TopK(logits, 1)[0]
		tr.Generated = append(tr.Generated, next)
		logits = step(next)
	}
	var b bytes.Buffer
	if err := tr.Write(&b); err != nil {
		t.Fatal(err)
	}
	r.trace, r.io = b.Bytes(), e.ExpertIOStats()
	return r
}

// TestExpertIOArmsBitIdentical is issue 8's "the arms agree bit for bit":
// on the MoE golden fixtures (DelayedSum, AsyncExperts and PreNorm, each
// as .cflow and .vflow), mmap, sync and direct give bit-identical logits,
// residual norms, expert selections and byte counts at every step and the
// same --trace-out JSON; the staged arms really read every selected
// expert from the file (k reads per MoE layer per token) with O_DIRECT
// where the filesystem allows it.
func TestExpertIOArmsBitIdentical(t *testing.T) {
	prompt, gen := []int{1, 17, 5, 69}, 6
	for _, name := range []string{"arch2_4_combined", "arch4_async_experts", "mixtral"} {
		for _, ext := range []string{".cflow", ".vflow"} {
			out, direct := engine.ConvertFixtureDirect(t, name, ext)
			m, err := vflowfmt.OpenModel(out)
			if err != nil {
				t.Fatal(err)
			}
			ref := runArm(t, m, expertio.Mmap, 2, prompt, gen)
			for _, mode := range []expertio.Mode{expertio.Sync, expertio.Direct} {
				for _, threads := range []int{1, 2} {
					got := runArm(t, m, mode, threads, prompt, gen)
					where := name + ext + " " + mode.String()
					sameArm(t, where, ref, got)
					h := m.Header
					steps := int64(len(prompt) + gen)
					if want := steps * int64(h.NumLayers) * int64(h.TopK); got.io.Reads != want {
						t.Fatalf("%s: %d expert reads, want %d (top-%d × %d layers × %d steps)", where, got.io.Reads, want, h.TopK, h.NumLayers, steps)
					}
					if got.io.Direct != direct || got.io.Mode != mode {
						t.Fatalf("%s: stats %+v, want mode %s with O_DIRECT %v", where, got.io, mode, direct)
					}
				}
			}
			m.Close()
		}
	}
}

func sameArm(t *testing.T, where string, a, b armRun) {
	t.Helper()
	for i := range a.logits {
		for j := range a.logits[i] {
			if math.Float32bits(a.logits[i][j]) != math.Float32bits(b.logits[i][j]) {
				t.Fatalf("%s: step %d logit %d = %v, mmap %v", where, i, j, b.logits[i][j], a.logits[i][j])
			}
		}
		oa, ob := a.obs[i], b.obs[i]
		if !slices.Equal(oa.ResidualNorms, ob.ResidualNorms) || oa.PreLMHeadNorm != ob.PreLMHeadNorm {
			t.Fatalf("%s: step %d norms differ", where, i)
		}
		if !slices.EqualFunc(oa.Experts, ob.Experts, slices.Equal) {
			t.Fatalf("%s: step %d experts %v, mmap %v", where, i, ob.Experts, oa.Experts)
		}
		if a.bytes[i] != b.bytes[i] {
			t.Fatalf("%s: step %d read %+v, mmap %+v", where, i, b.bytes[i], a.bytes[i])
		}
	}
	if !bytes.Equal(a.trace, b.trace) {
		t.Fatalf("%s: --trace-out JSON differs from mmap's", where)
	}
}

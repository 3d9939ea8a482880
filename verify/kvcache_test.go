package verify

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/cflow-dev/cflow/convert"
	"github.com/cflow-dev/cflow/engine"
	"github.com/cflow-dev/cflow/quant"
	"github.com/cflow-dev/cflow/trace"
	"github.com/cflow-dev/cflow/vflowfmt"
)

// TestPinnedTracesKVCaches holds every architecture's pinned traces (the
// pipeline-native fixtures, the Hugging Face families, Gemma 4, the
// trained models) to docs/TRACE.md's KV cache rules: each file quant type
// against the traces it verifies exactly (f32 with F32, *_replay with
// their quantization), with f16 and q8_0 caches (keys and values alike,
// and the mixes), on the float path verify runs. The f32 cache is
// TestGoldenTraces and its siblings, unchanged: the strict check. It logs
// each run's worst errors against the widened tolerances.
func TestPinnedTracesKVCaches(t *testing.T) {
	caches := [][2]engine.KVType{{engine.KVF16, engine.KVF16}, {engine.KVQ8_0, engine.KVQ8_0}}
	if !testing.Short() {
		caches = append(caches, [2]engine.KVType{engine.KVQ8_0, engine.KVF16}, [2]engine.KVType{engine.KVF16, engine.KVQ8_0})
	}
	for _, d := range []struct{ models, traces string }{
		{filepath.Join(goldenDir, "fixtures"), filepath.Join(goldenDir, "traces")},
		{filepath.Join(goldenDir, "families", "fixtures"), filepath.Join(goldenDir, "families", "traces")},
		{filepath.Join(goldenDir, "gemma4_text", "fixtures"), filepath.Join(goldenDir, "gemma4_text", "traces")},
		{filepath.Join(goldenDir, "trained"), filepath.Join(goldenDir, "trained", "traces")},
	} {
		byModel := pinnedByModel(t, d.traces)
		names := make([]string, 0, len(byModel))
		for n := range byModel {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, name := range names {
			fixture := filepath.Join(d.models, name)
			if _, err := os.Stat(fixture); err != nil || refusedFamilyFixture(t, fixture) {
				continue // TestGoldenTraces and its siblings report these
			}
			for _, q := range []quant.Type{quant.F32, quant.Q8_0, quant.Q4_0} {
				t.Run(name+"/"+q.String(), func(t *testing.T) {
					kvReplayFixture(t, fixture, byModel[name], q, caches)
				})
			}
		}
	}
}

// pinnedByModel groups a directory's traces by model name.
func pinnedByModel(t *testing.T, dir string) map[string][]string {
	traces, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	by := map[string][]string{}
	for _, p := range traces {
		base := strings.TrimSuffix(filepath.Base(p), ".json")
		i := strings.LastIndex(base, "_")
		if strings.HasSuffix(base, "_replay") {
			i = strings.LastIndex(base[:i], "_")
		}
		by[base[:i]] = append(by[base[:i]], p)
	}
	return by
}

func kvReplayFixture(t *testing.T, fixture string, traces []string, q quant.Type, caches [][2]engine.KVType) {
	var trs []*trace.Trace
	for _, p := range traces {
		tr, err := trace.Load(p)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := SelectRule(tr.Weights, q); err == nil && (tr.Weights != "f32" || q == quant.F32) {
			trs = append(trs, tr)
		}
	}
	if len(trs) == 0 {
		t.Skip("no exactly verified trace for this quant type")
	}
	out := filepath.Join(t.TempDir(), "m.cflow")
	if _, err := convert.Convert(context.Background(), fixture, out, convert.Options{Quant: q, NUMANodes: 1, Workers: 1}); err != nil {
		t.Fatalf("convert: %v", err)
	}
	m, err := vflowfmt.OpenModel(out)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	strict, err := engine.New(m, engine.Options{Threads: 2, Kernel: Kernel()})
	if err != nil {
		t.Fatal(err)
	}
	defer strict.Close()
	for _, ct := range caches {
		e, err := engine.New(m, engine.Options{Threads: 2, Kernel: Kernel(), CacheK: ct[0], CacheV: ct[1]})
		if err != nil {
			t.Fatal(err)
		}
		for _, tr := range trs {
			base, _ := SelectRule(tr.Weights, q)
			rule := KVRule(base, ct[0], ct[1])
			rep, err := ReplayKV(e, strict, tr, rule)
			if err != nil {
				e.Close()
				t.Fatal(err)
			}
			var wn, wl float64
			flips := 0
			for _, s := range rep.Steps {
				if s.RoutingFlip {
					flips++
					continue
				}
				wn, wl = math.Max(wn, s.NormErr), math.Max(wl, s.LogitErr)
			}
			t.Logf("%s k=%v v=%v: worst norm error %.3g (tolerance %.3g), logit error %.3g (tolerance %.3g), %d routing flips",
				tr.Weights, ct[0], ct[1], wn, rule.NormTol, wl, rule.LogitTol, flips)
			if !rep.Pass {
				var b strings.Builder
				rep.WriteTable(&b)
				t.Errorf("%s trace, k=%v v=%v cache:\n%s", tr.Weights, ct[0], ct[1], b.String())
			}
		}
		e.Close()
	}
}

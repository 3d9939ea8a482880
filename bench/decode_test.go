package bench

import (
	"math"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/cflow-dev/cflow/archspec"
	"github.com/cflow-dev/cflow/cflowfmt"
	"github.com/cflow-dev/cflow/cflowfmt/fmttest"
	"github.com/cflow-dev/cflow/quant"
)

// Run's bytes per token must be exactly the weights a dense llama token
// reads, computed here from the tiles the generator wrote (not from the
// runtime): every matrix tile outside the embedding, plus one embedding
// row, and split by stream the same way (attention, dense, embedding row,
// LM head). Its derived figures must follow from the measured ones.
func TestRunAccountsBytesPerToken(t *testing.T) {
	h := cflowfmt.Header{Version: cflowfmt.Version, HiddenSize: 96, IntermediateSize: 200, VocabSize: 300,
		NumLayers: 2, MaxSeqLen: 32, NumHeads: 4, NumKVHeads: 2, HeadDim: 24, TileRows: 64, TileCols: 96,
		QuantType: quant.Q4_0, CombineStyle: archspec.PreNorm}
	md := cflowfmt.NewMetadata()
	md.SetF32(cflowfmt.KeyRMSEps, 1e-5)
	path := filepath.Join(t.TempDir(), "m.cflow")
	written, err := fmttest.WriteCflow(path, &fmttest.Spec{Header: h, Meta: md, Seed: 3}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var want int64
	var by StreamBytesPerToken
	for _, tl := range written {
		n := int64(cflowfmt.TileSize(tl.T.Type, tl.T.Rows, tl.T.Cols))
		switch m := tl.TH.Matrix; {
		case m.IsNorm():
			n = 0
		case m == archspec.MatEmbed:
			n = 0
			if tl.TH.RowOffset == 0 {
				n = int64(tl.T.Type.ScaleBytes(1, tl.T.Cols) + tl.T.Type.DataBytes(1, tl.T.Cols))
				by.Embed += float64(n)
			}
		case m <= archspec.MatO:
			by.Attn += float64(n)
		case m <= archspec.MatDown:
			by.Dense += float64(n)
		case m == archspec.MatLMHead:
			by.LMHead += float64(n)
		default:
			t.Fatalf("unexpected tile %+v in a dense model", tl.TH)
		}
		want += n
	}
	f, err := cflowfmt.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := Run(f.Model, Config{Threads: 2, Tokens: 8, Runs: 3, Warmup: 2, ProbeBytes: 1 << 20, ProbeRuns: 3})
	if err != nil {
		t.Fatal(err)
	}
	if r.BytesPerToken != float64(want) {
		t.Errorf("bytes per token %v, want %d", r.BytesPerToken, want)
	}
	if r.StreamBytes != by || by.Attn == 0 || by.Dense == 0 || by.LMHead == 0 {
		t.Errorf("bytes per token by stream %+v, want %+v", r.StreamBytes, by)
	}
	if len(r.Runs) != 3 || r.DecodeTokS != median(r.Runs) || r.DecodeTokS <= 0 {
		t.Errorf("runs %v, median %v", r.Runs, r.DecodeTokS)
	}
	// A probe pass before each of the 3 decode runs and one after the last:
	// 4 passes, past ProbeRuns' 3.
	if len(r.ProbeRuns) != 4 || r.RooflineGBs != median(r.ProbeRuns) {
		t.Errorf("probe passes %v (median %v), want 4 bracketing the 3 runs", r.ProbeRuns, r.RooflineGBs)
	}
	near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Abs(b) }
	if !near(r.GBs, r.DecodeTokS*r.BytesPerToken/1e9) || !near(r.RooflineFrac, r.GBs/r.RooflineGBs) ||
		!near(r.RooflineTokS, r.RooflineGBs*1e9/r.BytesPerToken) {
		t.Errorf("derived figures inconsistent: %+v", r)
	}
	if r.Threads != 2 || r.Quant != "q4_0" || r.Kernel == "" {
		t.Errorf("labels: %+v", r)
	}
	// The page-size report measures the model's own mapping: all of the
	// file, no more (smaps reports where Linux has it).
	if runtime.GOOS == "linux" {
		if r.HugePageFraction == nil || r.MappedBytes != f.Size || r.HugePageBytes > r.MappedBytes ||
			*r.HugePageFraction != float64(r.HugePageBytes)/float64(r.MappedBytes) {
			t.Errorf("huge pages: %v of %d bytes (fraction %v), want of the %d-byte file", r.HugePageBytes, r.MappedBytes, r.HugePageFraction, f.Size)
		}
	}
}

func TestRunRefusesMoreTokensThanContext(t *testing.T) {
	h := cflowfmt.Header{Version: cflowfmt.Version, HiddenSize: 32, IntermediateSize: 32, VocabSize: 10,
		NumLayers: 1, MaxSeqLen: 4, NumHeads: 1, NumKVHeads: 1, HeadDim: 32, TileRows: 32, TileCols: 32,
		QuantType: quant.F32, CombineStyle: archspec.PreNorm}
	f := openModel(t, h, 1)
	if _, err := Run(f.Model, Config{Tokens: 5}); err == nil {
		t.Error("5 tokens on a 4-position model: no error")
	}
}

// --prompt N with --tokens 0: only the prompt test runs (no decode figures,
// no bytes per token), its median is of its own runs, and the CPU is named;
// nothing to measure is refused.
func TestRunPromptOnly(t *testing.T) {
	h := cflowfmt.Header{Version: cflowfmt.Version, HiddenSize: 64, IntermediateSize: 96, VocabSize: 50,
		NumLayers: 2, MaxSeqLen: 32, NumHeads: 2, NumKVHeads: 1, HeadDim: 32, TileRows: 32, TileCols: 64,
		QuantType: quant.Q8_0, CombineStyle: archspec.PreNorm}
	f := openModel(t, h, 2)
	r, err := Run(f.Model, Config{Threads: 1, Prompt: 20, Runs: 3, ProbeBytes: 1 << 20, ProbeRuns: 1})
	if err != nil {
		t.Fatal(err)
	}
	if r.PromptTokens != 20 || len(r.PromptRuns) != 3 || r.PromptTokS != median(r.PromptRuns) || r.PromptTokS <= 0 {
		t.Errorf("prompt: %d tokens, runs %v, median %v", r.PromptTokens, r.PromptRuns, r.PromptTokS)
	}
	if r.Tokens != 0 || len(r.Runs) != 0 || r.DecodeTokS != 0 || r.BytesPerToken != 0 {
		t.Errorf("--tokens 0 still decoded: %+v", r)
	}
	if len(r.ProbeRuns) != 1 {
		t.Errorf("probe passes %v without decode runs, want ProbeRuns' 1", r.ProbeRuns)
	}
	if r.CPU == "" {
		t.Error("no CPU name")
	}
	if _, err := Run(f.Model, Config{Prompt: 33, Tokens: 1}); err == nil {
		t.Error("a 33-token prompt on a 32-position model: no error")
	}
	if _, err := Run(f.Model, Config{}); err == nil {
		t.Error("no prompt and no decode tokens: no error")
	}
}

// --parallel N: N sequences step together through StepBatch. The engine
// counts each sequence's tokens and bytes as if alone, so bytes per token
// match the one-sequence run's exactly; tok/s counts every sequence, and
// the effective GB/s and roofline divide a step's one pass over the
// weights among them. More sequences than one pass feeds are refused.
func TestRunParallel(t *testing.T) {
	h := cflowfmt.Header{Version: cflowfmt.Version, HiddenSize: 64, IntermediateSize: 96, VocabSize: 50,
		NumLayers: 2, MaxSeqLen: 32, NumHeads: 2, NumKVHeads: 1, HeadDim: 32, TileRows: 32, TileCols: 64,
		QuantType: quant.Q4_0, CombineStyle: archspec.PreNorm}
	f := openModel(t, h, 4)
	cfg := Config{Threads: 2, Tokens: 6, Runs: 2, Warmup: 1, ProbeBytes: 1 << 20, ProbeRuns: 3}
	one, err := Run(f.Model, cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Parallel = 3
	three, err := Run(f.Model, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if one.Parallel != 0 || three.Parallel != 3 || three.Tokens != 6 || len(three.Runs) != 2 || three.DecodeTokS != median(three.Runs) {
		t.Fatalf("parallel %d / %d, tokens %d, runs %v, median %v", one.Parallel, three.Parallel, three.Tokens, three.Runs, three.DecodeTokS)
	}
	if three.BytesPerToken != one.BytesPerToken || three.StreamBytes != one.StreamBytes {
		t.Errorf("bytes per token %v with 3 sequences, %v with one", three.BytesPerToken, one.BytesPerToken)
	}
	near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Abs(b) }
	if !near(three.GBs*1e9*3, three.DecodeTokS*three.BytesPerToken) ||
		!near(three.RooflineTokS, three.RooflineGBs*1e9/three.BytesPerToken*3) || !near(three.RooflineFrac, three.GBs/three.RooflineGBs) {
		t.Errorf("derived figures of a 3-sequence run: %+v", three)
	}
	if _, err := Run(f.Model, Config{Tokens: 2, Parallel: 5, Batch: 4, ProbeBytes: 1 << 20}); err == nil {
		t.Error("5 sequences with 4 tokens per pass: no error")
	}
}

// A run on several (here simulated) NUMA nodes says so, with the node
// copies' page sizes, since decode then reads the copies and not the
// model mapping the page figures describe; a plain run says nothing.
func TestRunReportsNUMA(t *testing.T) {
	h := cflowfmt.Header{Version: cflowfmt.Version, HiddenSize: 64, IntermediateSize: 96, VocabSize: 50,
		NumLayers: 2, MaxSeqLen: 32, NumHeads: 2, NumKVHeads: 1, HeadDim: 32, TileRows: 32, TileCols: 64,
		QuantType: quant.Q4_0, CombineStyle: archspec.PreNorm}
	f := openModel(t, h, 4)
	cfg := Config{Threads: 2, Tokens: 2, Runs: 1, ProbeBytes: 1 << 20, ProbeRuns: 1}
	r, err := Run(f.Model, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if r.NUMA != "" {
		t.Errorf("a plain run reports NUMA: %q", r.NUMA)
	}
	t.Setenv("CFLOW_NUMA_TOPOLOGY", "0:0;1:1")
	if r, err = Run(f.Model, cfg); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"numa: 2 nodes 0:0;1:1", "tiles copied to node-local memory (", "on 2 MiB pages)"} {
		if !strings.Contains(r.NUMA, want) {
			t.Errorf("NUMA line %q lacks %q", r.NUMA, want)
		}
	}
}

// openModel writes a random model of header h (fmttest, seed) to a temp
// file and opens it, closed when the test ends.
func openModel(t *testing.T, h cflowfmt.Header, seed int64) *cflowfmt.File {
	t.Helper()
	path := filepath.Join(t.TempDir(), "m.cflow")
	if _, err := fmttest.WriteCflow(path, &fmttest.Spec{Header: h, Meta: cflowfmt.NewMetadata(), Seed: seed}, nil); err != nil {
		t.Fatal(err)
	}
	f, err := cflowfmt.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// --depth N: every prompt and decode run starts with N tokens in the
// cache. Depth + tokens filling the context exactly runs, several times
// (each run is cut back to the depth, not appended after the last); one
// position more is refused before anything runs, as is depth with
// parallel sequences.
func TestRunAtDepth(t *testing.T) {
	h := cflowfmt.Header{Version: cflowfmt.Version, HiddenSize: 64, IntermediateSize: 96, VocabSize: 50,
		NumLayers: 2, MaxSeqLen: 32, NumHeads: 2, NumKVHeads: 1, HeadDim: 32, TileRows: 32, TileCols: 64,
		QuantType: quant.Q8_0, CombineStyle: archspec.PreNorm}
	f := openModel(t, h, 2)
	r, err := Run(f.Model, Config{Threads: 1, Depth: 24, Tokens: 8, Prompt: 8, Warmup: 8, Runs: 3, ProbeBytes: 1 << 20, ProbeRuns: 1})
	if err != nil {
		t.Fatal(err)
	}
	if r.Depth != 24 || len(r.Runs) != 3 || len(r.PromptRuns) != 3 || r.DecodeTokS <= 0 {
		t.Errorf("depth 24: %+v", r)
	}
	for _, c := range []Config{{Depth: 25, Tokens: 8}, {Depth: 25, Prompt: 8}, {Depth: 1, Tokens: 2, Parallel: 2}, {Depth: -1, Tokens: 1}} {
		if _, err := Run(f.Model, c); err == nil {
			t.Errorf("%+v on a 32-position model: no error", c)
		}
	}
}

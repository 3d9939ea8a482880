package bench

import (
	"cmp"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime/pprof"
	"time"

	"github.com/cflow-dev/cflow/cflowfmt"
	"github.com/cflow-dev/cflow/engine"
	"github.com/cflow-dev/cflow/engine/expertio"
	"github.com/cflow-dev/cflow/internal/fileio"
)

// Config is one `cflowc bench` invocation.
type Config struct {
	Threads int // decode and probe threads (≥ 1)
	Tokens  int // decode tokens per timed run; 0 skips decode
	// Prompt is the prompt length of the prompt-processing test (llama-bench's
	// ppN: N tokens from an empty cache, timed as one batch); 0 skips it.
	Prompt int
	// Depth is llama-bench's -d: the prompt and decode tests run after
	// Depth tokens (BOS and seeded random tokens, prefilled once, untimed)
	// are already in the KV cache, each run cut back to them, so decode
	// at depth is timed as llama-bench times it; 0 starts from empty.
	Depth int
	// Batch is the prompt tokens fed per pass over the weights (the
	// engine's Options.Batch; 0 = engine.MaxBatch, 1 = token by token).
	Batch      int
	Runs       int   // timed runs; the median is reported
	Warmup     int   // untimed tokens decoded first (page faults, caches)
	ProbeBytes int64 // probe buffer size; 0 = ProbeBytes
	// ProbeRuns is the least number of probe passes (0 = 5). Decode runs
	// are bracketed by passes, one before each run and one after the
	// last (unless Profile is set); the rest follow.
	ProbeRuns int
	Seed      uint64
	// Profile, when set, receives a CPU profile of the timed prompt and
	// decode runs only
	// (not the warm-up or the probe), for go tool pprof.
	Profile io.Writer
	// ExpertIO is how the engine fetches expert tiles (--expert-io), so the
	// staged-I/O arms can be benchmarked like the default mmap path.
	ExpertIO expertio.Mode
	// Parallel is how many sequences decode together (≤ 1: one, through
	// Step). More go through StepBatch, one token of each per step and one
	// pass over the weights for all, as `cflowc serve` ticks with that
	// many clients decoding, so the server's batching can be measured
	// without HTTP (like llama.cpp's batched-bench). At most the batch
	// size.
	Parallel int
	// CacheK and CacheV are the KV cache types (engine.Options).
	CacheK, CacheV engine.KVType
}

// Result is what `cflowc bench` prints; the JSON names are the issue's.
type Result struct {
	Model   string `json:"model"`
	CPU     string `json:"cpu"`
	Quant   string `json:"quant"`
	Kernel  string `json:"kernel"`
	Threads int    `json:"threads"`
	Tokens  int    `json:"tokens"`
	// Parallel is Config.Parallel when above 1: Tokens is then per
	// sequence, and Runs and DecodeTokS count every sequence's tokens.
	Parallel int `json:"parallel,omitempty"`
	// Depth is Config.Depth: the tokens already cached before each test.
	Depth int `json:"depth,omitempty"`
	// KVCacheType is the keys' and values' cache types; KVBytesPerPosition
	// what one cached position costs in them (engine.KVBytesPerPosition).
	KVCacheType        KVCacheType `json:"kv_cache_type"`
	KVBytesPerPosition int64       `json:"kv_bytes_per_position"`
	Runs               []float64   `json:"runs_tok_s"`
	DecodeTokS         float64     `json:"decode_tok_s"`
	// BytesPerToken is per token as if it were decoded alone (the
	// engine's count); with Parallel sequences a step reads a dense
	// model's weights once for all of them, so GBs, RooflineTokS and
	// RooflineFrac divide it among them.
	BytesPerToken float64 `json:"bytes_per_token"`
	// StreamBytes splits BytesPerToken by stream (attention, dense FFN,
	// router, the experts actually read, the embedding row, the LM head),
	// so a MoE benchmark shows what conditional expert loading reads.
	StreamBytes  StreamBytesPerToken `json:"stream_bytes_per_token"`
	GBs          float64             `json:"gb_s"`
	RooflineGBs  float64             `json:"roofline_gb_s"`
	RooflineTokS float64             `json:"roofline_tok_s"`
	RooflineFrac float64             `json:"roofline_fraction"`
	ProbeRuns    []float64           `json:"probe_runs_gb_s"`
	// Prompt processing (Config.Prompt > 0): tokens per second of a prompt
	// of PromptTokens tokens from an empty cache, median over runs.
	PromptTokens int       `json:"prompt_tokens,omitempty"`
	PromptRuns   []float64 `json:"prompt_runs_tok_s,omitempty"`
	PromptTokS   float64   `json:"prompt_tok_s,omitempty"`
	Batch        int       `json:"prompt_batch,omitempty"`
	// HugePageFraction is how much of the model's mapping the kernel mapped
	// with 2 MiB pages once the timed runs had read it (nil where smaps
	// cannot say): below ~0.9 decode pays TLB misses the page cache's small
	// folios cause, not the engine (2 MiB ÷ 4 KiB folios 1.12× at one
	// thread, 1.22× at two on the Zen 3 VM, docs/PERFORMANCE.md, "Session
	// 7"), and `cflowc dev recache` fixes it.
	// HugePageBytes of MappedBytes are the figures behind the fraction.
	HugePageFraction *float64 `json:"huge_page_fraction,omitempty"`
	HugePageBytes    int64    `json:"huge_page_bytes,omitempty"`
	MappedBytes      int64    `json:"mapped_bytes,omitempty"`
	// NUMA is the engine's NUMA line (engine.NUMAReport) when it ran on
	// several nodes: the topology, the plan's use, and, in copy mode, how
	// much of the node copies decode reads are on 2 MiB pages (the mapping
	// figures above are then not what it reads).
	NUMA string `json:"numa,omitempty"`
}

// StreamBytesPerToken is weight bytes read per decoded token by stream, from
// the engine's counters over the timed runs.
type StreamBytesPerToken struct {
	Attn    float64 `json:"attn"`
	Dense   float64 `json:"dense"`
	Router  float64 `json:"router"`
	Experts float64 `json:"experts"`
	Embed   float64 `json:"embed"`
	LMHead  float64 `json:"lm_head"`
}

// Run benchmarks decode of m: like llama-bench's tg test, each run starts
// from an empty KV cache at position 0 and feeds BOS then seeded random
// tokens (no sampling, so the timing is the forward pass), Tokens per run.
// Bytes per token come from the engine's counters over the timed runs.
// With Prompt > 0 it first times prompt processing like llama-bench's pp
// test: BOS and seeded random tokens, Prompt of them from an empty cache
// through the engine's prompt path. The read probe, with the same thread
// count, takes a pass before each decode run and after the last, so that
// the roofline fraction compares medians taken over the same minutes of a
// shared machine, then the passes left of ProbeRuns.
func Run(m *cflowfmt.Model, cfg Config) (*Result, error) {
	cfg.Threads = max(1, cfg.Threads)
	cfg.Runs = max(1, cfg.Runs)
	if cfg.Depth < 0 {
		return nil, fmt.Errorf("bench: depth %d, need ≥ 0", cfg.Depth)
	}
	if cfg.Tokens < 0 || cfg.Prompt < 0 || cfg.Tokens+cfg.Prompt == 0 {
		return nil, fmt.Errorf("bench: %d decode and %d prompt tokens: nothing to measure", cfg.Tokens, cfg.Prompt)
	}
	if cfg.ProbeBytes == 0 {
		cfg.ProbeBytes = ProbeBytes
	}
	if cfg.ProbeRuns == 0 {
		cfg.ProbeRuns = 5
	}
	h := &m.Header
	if need := max(cfg.Tokens, cfg.Warmup, cfg.Prompt); cfg.Depth+need > int(h.MaxSeqLen) {
		return nil, fmt.Errorf("bench: %d tokens per run at depth %d exceed the model's context of %d", need, cfg.Depth, h.MaxSeqLen)
	}
	cfg.Batch = cmp.Or(cfg.Batch, engine.MaxBatch)
	cfg.Parallel = max(1, cfg.Parallel)
	if cfg.Parallel > 1 && cfg.Depth > 0 {
		return nil, fmt.Errorf("bench: depth %d with %d parallel sequences is not implemented", cfg.Depth, cfg.Parallel)
	}
	if cfg.Parallel > cfg.Batch {
		return nil, fmt.Errorf("bench: %d parallel sequences exceed the batch of %d tokens per pass", cfg.Parallel, cfg.Batch)
	}
	e, err := engine.New(m, engine.Options{Threads: cfg.Threads, ExpertIO: cfg.ExpertIO, Batch: cfg.Batch,
		CacheK: cfg.CacheK, CacheV: cfg.CacheV})
	if err != nil {
		return nil, err
	}
	defer e.Close()
	bos := int(m.Meta.U32(cflowfmt.KeyBOS, 1)) % int(h.VocabSize)
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x5eed))
	tokens := func(n int) []int {
		ts := make([]int, n)
		for i := range ts {
			ts[i] = rng.IntN(int(h.VocabSize))
		}
		if n > 0 {
			ts[0] = bos
		}
		return ts
	}
	// start empties the default sequence, or cuts it back to the
	// prefilled depth.
	start := func() error {
		if cfg.Depth == 0 {
			e.Reset()
			return nil
		}
		return e.Truncate(cfg.Depth)
	}
	if cfg.Depth > 0 {
		e.Reset()
		if _, err := prompt(e, tokens(cfg.Depth)); err != nil {
			return nil, err
		}
	}
	decode := func(n int) error {
		if err := start(); err != nil {
			return err
		}
		for _, tok := range tokens(n) {
			if _, err := e.Step(tok); err != nil {
				return err
			}
		}
		return nil
	}
	if cfg.Parallel > 1 {
		decode = parallelDecode(e, cfg.Parallel, tokens)
	}
	if err := decode(cfg.Warmup); err != nil {
		return nil, err
	}
	// The probe's buffer is filled and faulted in before any timing.
	rd := newReader(cfg.ProbeBytes, cfg.Threads)
	defer rd.close()
	r := &Result{Model: m.Path, CPU: CPUName(), Quant: h.QuantType.String(), Kernel: e.Kernel().Name(), Threads: cfg.Threads, Tokens: cfg.Tokens, Depth: cfg.Depth,
		KVBytesPerPosition: e.KVBytesPerPosition()}
	ck, cv := e.CacheTypes()
	r.KVCacheType = KVCacheType{K: ck.String(), V: cv.String()}
	if cfg.Parallel > 1 {
		r.Parallel = cfg.Parallel
	}
	if rep := e.NUMA(); rep.Nodes > 1 {
		r.NUMA = rep.String()
	}
	if cfg.Profile != nil {
		if err := pprof.StartCPUProfile(cfg.Profile); err != nil {
			return nil, err
		}
		defer pprof.StopCPUProfile() // idempotent; also on error
	}
	if cfg.Prompt > 0 {
		r.PromptTokens, r.Batch = cfg.Prompt, cfg.Batch
		// One untimed prompt first, as llama-bench warms up: the engine
		// allocates its batch columns on first use.
		if err := start(); err != nil {
			return nil, err
		}
		if _, err := prompt(e, tokens(min(cfg.Prompt, r.Batch))); err != nil {
			return nil, err
		}
		for range cfg.Runs {
			ts := tokens(cfg.Prompt)
			if err := start(); err != nil {
				return nil, err
			}
			t0 := time.Now()
			if _, err := prompt(e, ts); err != nil {
				return nil, err
			}
			r.PromptRuns = append(r.PromptRuns, float64(cfg.Prompt)/time.Since(t0).Seconds())
		}
		r.PromptTokS = median(r.PromptRuns)
	}
	if cfg.Tokens > 0 {
		between := rd.pass
		if cfg.Profile != nil {
			between = func() {} // the profile is the engine's alone
		}
		if err := decodeRuns(e, cfg, r, decode, between); err != nil {
			return nil, err
		}
	}
	if cfg.Profile != nil {
		pprof.StopCPUProfile()
	}
	if h, err := fileio.MappedHugePages(m.Image); err == nil && h.Size > 0 {
		f := h.Fraction()
		r.HugePageFraction, r.HugePageBytes, r.MappedBytes = &f, h.Huge, h.Size
	}
	for len(rd.p.GBs) < cfg.ProbeRuns {
		rd.pass()
	}
	p := rd.probe()
	r.ProbeRuns, r.RooflineGBs = p.GBs, p.Median
	if r.BytesPerToken > 0 {
		r.RooflineTokS = p.Median * 1e9 / r.BytesPerToken * float64(cfg.Parallel)
	}
	if p.Median > 0 {
		r.RooflineFrac = r.GBs / p.Median
	}
	return r, nil
}

// prompt feeds a whole prompt from the engine's current position through
// its batched prefill and returns the logits after its last token.
func prompt(e *engine.Engine, ts []int) ([]float32, error) { return e.Prefill(ts) }

// decodeRuns times cfg.Runs decode runs into r (tok/s per run, median,
// bytes per token and effective GB/s), calling between before each run and
// after the last.
func decodeRuns(e *engine.Engine, cfg Config, r *Result, decode func(n int) error, between func()) error {
	before := e.Stats()
	defer between()
	for range cfg.Runs {
		between()
		t0 := time.Now()
		if err := decode(cfg.Tokens); err != nil {
			return err
		}
		r.Runs = append(r.Runs, float64(cfg.Tokens*cfg.Parallel)/time.Since(t0).Seconds())
	}
	after := e.Stats()
	r.DecodeTokS = median(r.Runs)
	n := float64(after.Tokens - before.Tokens)
	r.BytesPerToken = float64(after.Total.Sum()-before.Total.Sum()) / n
	a, b := after.Total, before.Total
	r.StreamBytes = StreamBytesPerToken{Attn: float64(a.Attn-b.Attn) / n, Dense: float64(a.Dense-b.Dense) / n,
		Router: float64(a.Router-b.Router) / n, Experts: float64(a.Experts-b.Experts) / n,
		Embed: float64(a.Embed-b.Embed) / n, LMHead: float64(a.LMHead-b.LMHead) / n}
	r.GBs = r.DecodeTokS * r.BytesPerToken / 1e9 / float64(cfg.Parallel)
	return nil
}

// parallelDecode returns Run's decode for n sequences stepped together:
// each run empties them and feeds each its own BOS and seeded random
// tokens, one token of every sequence per StepBatch.
func parallelDecode(e *engine.Engine, n int, tokens func(int) []int) func(int) error {
	seqs := make([]*engine.Sequence, n)
	for i := range seqs {
		seqs[i] = e.NewSequence()
	}
	step := make([]int, n)
	return func(steps int) error {
		streams := make([][]int, n)
		for i, q := range seqs {
			q.Reset()
			streams[i] = tokens(steps)
		}
		for s := range steps {
			for i := range step {
				step[i] = streams[i][s]
			}
			if _, err := e.StepBatch(seqs, step); err != nil {
				return err
			}
		}
		return nil
	}
}

// KVCacheType names the keys' and values' KV cache types in the JSON
// (llama-bench's type_k and type_v).
type KVCacheType struct {
	K string `json:"k"`
	V string `json:"v"`
}

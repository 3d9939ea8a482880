package bench

import (
	"fmt"
	"io"
	"math/rand/v2"
	"runtime/pprof"
	"time"

	"github.com/cflow-dev/cflow/cflowfmt"
	"github.com/cflow-dev/cflow/runtime"
)

// Config is one `cflowc bench` invocation.
type Config struct {
	Threads    int   // decode and probe threads (≥ 1)
	Tokens     int   // decode tokens per timed run
	Runs       int   // timed runs; the median is reported
	Warmup     int   // untimed tokens decoded first (page faults, caches)
	ProbeBytes int64 // probe buffer size; 0 = ProbeBytes
	ProbeRuns  int   // probe passes; 0 = 5
	Seed       uint64
	// Profile, when set, receives a CPU profile of the timed runs only
	// (not the warm-up or the probe), for go tool pprof.
	Profile io.Writer
	// ExpertIO is how the engine fetches expert tiles (--expert-io), so the
	// staged-I/O arms can be benchmarked like the default mmap path.
	ExpertIO runtime.ExpertIO
}

// Result is what `cflowc bench` prints; the JSON names are the issue's.
type Result struct {
	Model         string    `json:"model"`
	Quant         string    `json:"quant"`
	Kernel        string    `json:"kernel"`
	Threads       int       `json:"threads"`
	Tokens        int       `json:"tokens"`
	Runs          []float64 `json:"runs_tok_s"`
	DecodeTokS    float64   `json:"decode_tok_s"`
	BytesPerToken float64   `json:"bytes_per_token"`
	GBs           float64   `json:"gb_s"`
	RooflineGBs   float64   `json:"roofline_gb_s"`
	RooflineTokS  float64   `json:"roofline_tok_s"`
	RooflineFrac  float64   `json:"roofline_fraction"`
	ProbeRuns     []float64 `json:"probe_runs_gb_s"`
}

// Run benchmarks decode of m: like llama-bench's tg test, each run starts
// from an empty KV cache at position 0 and feeds BOS then seeded random
// tokens (no sampling, so the timing is the forward pass), Tokens per run.
// Bytes per token come from the engine's counters over the timed runs. The
// probe runs after decode, with the same thread count.
func Run(m *cflowfmt.Model, cfg Config) (*Result, error) {
	cfg.Threads = max(1, cfg.Threads)
	cfg.Tokens = max(1, cfg.Tokens)
	cfg.Runs = max(1, cfg.Runs)
	if cfg.ProbeBytes == 0 {
		cfg.ProbeBytes = ProbeBytes
	}
	if cfg.ProbeRuns == 0 {
		cfg.ProbeRuns = 5
	}
	h := &m.Header
	if need := max(cfg.Tokens, cfg.Warmup); need > int(h.MaxSeqLen) {
		return nil, fmt.Errorf("bench: %d tokens per run exceed the model's context of %d", need, h.MaxSeqLen)
	}
	e, err := runtime.New(m, runtime.Options{Threads: cfg.Threads, ExpertIO: cfg.ExpertIO})
	if err != nil {
		return nil, err
	}
	defer e.Close()
	bos := int(m.Meta.U32(cflowfmt.KeyBOS, 1)) % int(h.VocabSize)
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x5eed))
	decode := func(n int) error {
		e.Reset()
		tok := bos
		for i := 0; i < n; i++ {
			if _, err := e.Step(tok); err != nil {
				return err
			}
			tok = rng.IntN(int(h.VocabSize))
		}
		return nil
	}
	if err := decode(cfg.Warmup); err != nil {
		return nil, err
	}
	r := &Result{Model: m.Path, Quant: h.QuantType.String(), Kernel: e.Kernel().Name(), Threads: cfg.Threads, Tokens: cfg.Tokens}
	before := e.Stats()
	if cfg.Profile != nil {
		if err := pprof.StartCPUProfile(cfg.Profile); err != nil {
			return nil, err
		}
	}
	for range cfg.Runs {
		t0 := time.Now()
		if err := decode(cfg.Tokens); err != nil {
			if cfg.Profile != nil {
				pprof.StopCPUProfile()
			}
			return nil, err
		}
		r.Runs = append(r.Runs, float64(cfg.Tokens)/time.Since(t0).Seconds())
	}
	if cfg.Profile != nil {
		pprof.StopCPUProfile()
	}
	after := e.Stats()
	r.DecodeTokS = median(r.Runs)
	r.BytesPerToken = float64(after.Total.Sum()-before.Total.Sum()) / float64(after.Tokens-before.Tokens)
	r.GBs = r.DecodeTokS * r.BytesPerToken / 1e9
	p := ReadBandwidth(cfg.ProbeBytes, cfg.Threads, cfg.ProbeRuns)
	r.ProbeRuns, r.RooflineGBs = p.GBs, p.Median
	if r.BytesPerToken > 0 {
		r.RooflineTokS = p.Median * 1e9 / r.BytesPerToken
	}
	if p.Median > 0 {
		r.RooflineFrac = r.GBs / p.Median
	}
	return r, nil
}

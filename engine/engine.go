// Package engine is cflow's decode engine over a *cflowfmt.Model (from
// either file format), driven only by the header and metadata. Its one
// forward entry point, Forward, takes a Batch as data — which sequence
// each token belongs to, its position, whether its logits are wanted —
// and runs each pass of one column as a lone token and each pass of
// several as one walk over the weights for all of them, bit-identical to
// token by token. It follows engine/plan's per-token stream order,
// schedules delayed dense-FFN and expert outputs with a ring and a
// target-keyed queue, fuses Q/K/V and gate/up into one pass over their
// interleaved stripes, reads only the router-selected experts' tiles
// (through engine/expertio's disk tier when staged), and splits output
// stripes across engine/pool's workers (one pinned group per NUMA node,
// engine/numa) without changing a single bit of output.
package engine

import (
	"errors"
	"fmt"
	"math"
	"runtime"

	"github.com/cflow-dev/cflow/archspec"
	"github.com/cflow-dev/cflow/cflowfmt"
	"github.com/cflow-dev/cflow/engine/expertio"
	"github.com/cflow-dev/cflow/engine/numa"
	"github.com/cflow-dev/cflow/engine/plan"
	"github.com/cflow-dev/cflow/engine/pool"
	"github.com/cflow-dev/cflow/quant"
)

// Options configures an Engine.
type Options struct {
	// Threads is the number of threads splitting each matvec, the caller
	// included; ≤ 0 means runtime.NumCPU().
	Threads int
	// ExpertIO picks how expert tiles are fetched (mmap, or O_DIRECT reads
	// blocking at routing or overlapped until injection); see expertio.Mode.
	ExpertIO expertio.Mode
	// NUMA is the node topology to run on; nil detects it (CFLOW_NUMA_TOPOLOGY,
	// else sysfs). One node is the plain single-pool path; several start one
	// pinned worker group per node (numa_setup.go).
	NUMA *numa.Topology
	// Placer receives the multi-node engine's memory-binding requests; nil
	// is the real mbind(2). Tests inject a numa.Recorder.
	Placer numa.Placer
	// Kernel is the tile-dot path this engine runs; nil is
	// quant.DefaultKernel() (the fastest this CPU has, or CFLOW_KERNEL's).
	// Replaying a reference trace asks for a float-activation path
	// (verify.Kernel); engines in one process never share or switch it.
	Kernel *quant.Kernel

	// xioHooks stand in for the expert tier's filesystem in tests (a
	// filesystem refusing direct I/O, a slow or failing disk).
	xioHooks expertio.Hooks
	// Batch is the most tokens Prefill and StepBatch feed per pass over the
	// weights; 0 means MaxBatch, 1 feeds one token per pass (the baseline
	// batched prefill is measured against).
	Batch int
	// CacheK and CacheV are the KV cache's key and value storage
	// (kvtype.go); the zero value is f32, the exact cache.
	CacheK, CacheV KVType
}

// ErrContextFull is returned by Step once the KV cache holds
// Header.MaxSeqLen positions: the model was not built for longer contexts.
var ErrContextFull = errors.New("runtime: context full")

// stream indexes the per-stream counters (activation preparations).
const (
	stAttn = iota
	stDense
	stMoE
	numStreams
)

// Engine decodes one sequence. It is not safe for concurrent use; run
// several Engines over one Model for several sequences.
type Engine struct {
	m      *cflowfmt.Model
	h      cflowfmt.Header
	d      int
	eps    float32
	fx     *modelFeatures // HF-family features (attention_features.go)
	steps  []plan.Step
	iters  int
	passes int
	style  combiner // the combine style's residual arithmetic (combine_*.go)

	layers []*layerPlan
	lm     *matPlan
	embed  []stripe // embedding stripes sorted by first row
	pool   *pool.Pool
	kernel *quant.Kernel
	// cacheK, cacheV: Options.CacheK/CacheV, every sequence's cache types.
	cacheK, cacheV KVType
	// pairs: matvecs over Q4_0 plans walk two stripes at once
	// (matvec_pairs.go); set in New from the kernel, cleared by tests that
	// compare against the one-stripe walk.
	pairs bool

	// def is the sequence Step, Prefill, Pos and Reset work on; lone
	// runs every pass of one column (worker.go).
	def  *Sequence
	lone *worker
	// The batches Step, Prefill and StepFeeds reuse, so a decode step
	// allocates nothing.
	stepB, prefillB, feedB Batch

	xio     *expertio.Tier      // staged expert reads; nil under expertio.Mmap
	xplans  map[int]*stagedPlan // staged experts' plans, by layer·E + expert
	numa    *numaState          // nil on the plain, single-node path
	numaRep NUMAReport

	stats Stats // every worker's counters, folded in after each pass

	// Batched forward (batch.go): lanes are the columns a batched pass
	// reuses, each with a worker whose weight reads and parallel loops go
	// to the batch driver.
	lanes []*lane
	batch int
	// batchYs is matvecLanes' scratch: every stripe's column output views.
	batchYs [][]float32
	// xbatches are the staged expert routings of the running batch whose
	// slots some column may still read (expertio_batch.go).
	xbatches []*stagedBatch

	// Test hooks: readHook sees every tile dot (offset, matrix), possibly
	// from several goroutines when Threads > 1; prepCount counts activation
	// preparations per stream.
	readHook  func(off int64, m archspec.MatrixID)
	prepCount [numStreams]int64
}

// Observation is what a trace records about the last token: ‖x_out‖₂ per
// layer (per pass for block-iterated models), the final residual's norm
// before the final norm, and the experts each pass selected.
type Observation struct {
	ResidualNorms []float64
	PreLMHeadNorm float64
	Experts       [][]int
}

// StreamBytes counts weight bytes read, by stream. Embed is the one
// embedding row a token reads; LMHead the vocabulary projection.
type StreamBytes struct {
	Attn, Dense, Router, Experts, Embed, LMHead int64
}

// Sum is every weight byte read, the numerator of effective GB/s.
func (b StreamBytes) Sum() int64 {
	return b.Attn + b.Dense + b.Router + b.Experts + b.Embed + b.LMHead
}

// Stats accumulates byte counts so run can report effective bandwidth and
// tests can prove conditional expert loading.
type Stats struct {
	Last   StreamBytes // the most recent token
	Total  StreamBytes
	Tokens int64
}

// New prepares an engine: it validates every non-expert tile against the
// header geometry, groups tiles into stripes and starts the worker pool.
// Close the engine to stop the pool.
func New(m *cflowfmt.Model, opt Options) (*Engine, error) {
	h := m.Header
	if err := h.Validate(); err != nil {
		return nil, err
	}
	iters := int(m.Meta.U32(cflowfmt.KeyBlockIterations, 1))
	steps, err := plan.Build(plan.FromHeader(&h, iters))
	if err != nil {
		return nil, err
	}
	if opt.CacheK > KVQ8_0 || opt.CacheV > KVQ8_0 {
		return nil, fmt.Errorf("runtime: KV cache types %v/%v: want %v", opt.CacheK, opt.CacheV, KVTypeNames)
	}
	e := &Engine{m: m, h: h, d: int(h.HiddenSize), steps: steps, iters: max(1, iters), kernel: opt.Kernel,
		cacheK: opt.CacheK, cacheV: opt.CacheV}
	if e.kernel == nil {
		e.kernel = quant.DefaultKernel()
	}
	e.pairs = e.kernel.PairsQ4()
	e.eps = m.Meta.F32(cflowfmt.KeyRMSEps, 1e-6)
	if e.fx, err = loadFeatures(m); err != nil {
		return nil, err
	}
	e.passes = int(h.NumLayers) * e.iters
	if e.style, err = newCombiner(&h, m.Meta); err != nil {
		return nil, err
	}
	if len(m.Layers) != int(h.NumLayers) {
		return nil, fmt.Errorf("runtime: model has %d layers, header says %d", len(m.Layers), h.NumLayers)
	}
	if len(m.FinalNorm) != e.d {
		return nil, fmt.Errorf("runtime: final norm has %d values, want %d", len(m.FinalNorm), e.d)
	}
	if err := e.buildVocab(); err != nil {
		return nil, err
	}
	for l := range m.Layers {
		lp, err := e.buildLayer(l)
		if err != nil {
			return nil, err
		}
		e.layers = append(e.layers, lp)
	}
	if opt.Batch < 0 || opt.Batch > MaxBatch {
		return nil, fmt.Errorf("runtime: batch %d outside 0..%d", opt.Batch, MaxBatch)
	}
	e.batch = opt.Batch
	if e.batch == 0 {
		e.batch = MaxBatch
	}
	e.lone = e.newWorker(alone{}, 0) // minItems set once the pool has started
	e.def = e.NewSequence()
	if err := e.initExpertIO(opt.ExpertIO, opt.xioHooks); err != nil {
		return nil, err
	}
	threads := opt.Threads
	if threads <= 0 {
		threads = runtime.NumCPU()
	}
	if err := e.startPool(opt, threads); err != nil {
		if e.xio != nil {
			e.xio.Close()
		}
		return nil, err
	}
	e.lone.minItems = e.pool.Workers() + 1
	return e, nil
}

// buildVocab indexes the embedding rows and builds the LM-head plan (the
// embedding tiles themselves when the embeddings are tied).
func (e *Engine) buildVocab() error {
	m, V := e.m, int(e.h.VocabSize)
	emb, err := buildPlan("embedding", m.Embed, map[archspec.MatrixID]int{archspec.MatEmbed: 0}, []int{V}, e.d)
	if err != nil {
		return err
	}
	if !emb.covers() {
		return fmt.Errorf("runtime: embedding tiles do not cover %d×%d", V, e.d)
	}
	e.embed = sortStripes(emb.stripes)
	if e.h.Has(cflowfmt.FlagTiedEmbed) {
		e.lm = emb
		return nil
	}
	if len(m.LMHead) == 0 {
		return fmt.Errorf("runtime: no LM head tiles and embeddings are not tied")
	}
	lm, err := buildPlan("lm_head", m.LMHead, map[archspec.MatrixID]int{archspec.MatLMHead: 0}, []int{V}, e.d)
	if err != nil {
		return err
	}
	if !lm.covers() {
		return fmt.Errorf("runtime: LM head tiles do not cover %d×%d", V, e.d)
	}
	e.lm = lm
	return nil
}

// Close stops the worker pool and the expert readers (after their reads
// finish). The Model stays open (its owner closes it).
func (e *Engine) Close() {
	e.pool.Close()
	e.closeNUMA()
	if e.xio != nil {
		e.xio.Close()
	}
}

// Pos is the number of tokens the default sequence has consumed (the next
// token's position).
func (e *Engine) Pos() int { return e.def.Pos() }

// Reset forgets the default sequence, keeping allocations, so one engine
// can replay many traces.
func (e *Engine) Reset() { e.def.Reset() }

// Truncate cuts the default sequence back to its first n positions
// (Sequence.Truncate): bench's --depth restarts each run from the same
// prefilled history.
func (e *Engine) Truncate(n int) error { return e.def.Truncate(n) }

// Observation describes the default sequence's last token (Step,
// Prefill); its slices are reused by the next.
func (e *Engine) Observation() *Observation { return e.def.Observation() }

// Stats returns the byte counters.
func (e *Engine) Stats() Stats { return e.stats }

// Header is the model's header, for callers sizing their own buffers.
func (e *Engine) Header() *cflowfmt.Header { return &e.h }

// Passes is the number of residual norms per token (layers × block
// iterations).
func (e *Engine) Passes() int { return e.passes }

func sqrtf(x float32) float32 { return float32(math.Sqrt(float64(x))) }

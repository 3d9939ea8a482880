package convert

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"time"

	"github.com/cflow-dev/cflow/cflowfmt"
	"github.com/cflow-dev/cflow/internal/fileio"
	"github.com/cflow-dev/cflow/quant"
	"github.com/cflow-dev/cflow/tokenizer"
	"github.com/cflow-dev/cflow/vflowfmt"
)

// Options control one conversion. The zero value converts with detection,
// Q4_0, the machine's NUMA node count, every core and no progress output.
type Options struct {
	// Model names the architecture (full or short name, see
	// Architectures) when config.json names none cflow knows; "" detects
	// it. Naming a different architecture than the config's is an error.
	Model string
	// Quant is the file's quant type. Norms and the router are F32
	// regardless.
	Quant quant.Type
	// NUMANodes is the node count the shard plan is cut for; 0 means
	// DefaultNUMANodes(). A file planned for N nodes loads on any machine.
	NUMANodes int
	// Tokenizer names a tokenizer to attach (tokenizer.json or a llama2.c
	// score table such as tokenizer.bin); it replaces the checkpoint's own.
	Tokenizer string
	// Workers is the number of quantizing goroutines; 0 means GOMAXPROCS.
	Workers int
	// Progress receives a live bar when ProgressBar is true (a terminal).
	Progress    io.Writer
	ProgressBar bool
	// Requant lets a GGUF's tensors of types cflow does not carry but can
	// dequantize (Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K) be dequantized and
	// quantized with Quant; without it they are refused by name.
	// Result.Requantized says what each cost.
	Requant bool

	onProgress func()            // test hook, called after each written tile or norm
	onMapped   func(file string) // test hook, called after each input file is mapped, before it is read
}

// Result describes a finished conversion, for the summary line and tests.
type Result struct {
	Input, Output string
	Format        Format
	Architecture  string
	Header        cflowfmt.Header
	InputBytes    int64 // tensor bytes read from the checkpoint
	OutputBytes   int64
	Elapsed       time.Duration
	Plan          *cflowfmt.NUMAPlan
	// Notes say what the conversion left out on purpose (a multimodal
	// checkpoint's vision and audio towers); the CLI prints them.
	Notes []string
	// Requantized is each tensor --requant dequantized and requantized,
	// with the error that cost (RequantSummary prints it).
	Requantized []RequantCost
}

// Summary is the one line cflowc prints at the end: input and output bytes,
// seconds and input throughput.
func (r *Result) Summary() string {
	s := r.Elapsed.Seconds()
	return fmt.Sprintf("converted %s (%s) -> %s: %d input bytes, %d output bytes, %.2f s, %.2f GB/s input",
		r.Input, r.Architecture, r.Output, r.InputBytes, r.OutputBytes, s, float64(r.InputBytes)/max(s, 1e-9)/1e9)
}

// Convert reads the checkpoint at input (an HF directory, a .safetensors
// file beside its config.json, or a llama2.c .bin) and writes output, whose
// extension picks the format. Every check that can fail before writing runs
// before the output is created; after that, any error leaves no file.
func Convert(ctx context.Context, input, output string, opt Options) (*Result, error) {
	start := time.Now()
	format, err := FormatOf(output)
	if err != nil {
		return nil, err
	}
	if err := fileio.CheckOutput(output, input); err != nil {
		return nil, err
	}
	if !opt.Quant.Valid() {
		return nil, fmt.Errorf("unknown quant type %d", opt.Quant)
	}
	nodes := opt.NUMANodes
	if nodes == 0 {
		nodes = min(DefaultNUMANodes(), cflowfmt.MaxNUMANodes)
	}
	if nodes < 1 || nodes > cflowfmt.MaxNUMANodes {
		return nil, fmt.Errorf("--numa-nodes %d outside 1..%d", nodes, cflowfmt.MaxNUMANodes)
	}
	src, err := openSource(input, opt.onMapped)
	if err != nil {
		return nil, err
	}
	defer src.close()
	if err := checkNoRequant(src, opt.Quant); err != nil {
		return nil, err
	}
	requantized, err := requantForeign(src, opt.Requant, opt.Quant)
	if err != nil {
		return nil, err
	}
	p, fc, err := decodeFamily(src.config, opt.Model)
	if err != nil {
		return nil, err
	}
	if opt.Tokenizer != "" {
		if src.tokenizer, err = tokenizer.ReadFile(opt.Tokenizer); err != nil {
			return nil, fmt.Errorf("--tokenizer: %w", err)
		}
	}
	// From here on the checkpoint is read through its mappings: every
	// goroutine that reads them guards its reads (GuardFaultIn), so an
	// input truncated under the conversion is a FormatError naming the file
	// and offset (exit 2), and the output is aborted as for any error.
	c := &checkpoint{source: src}
	var s *modelSpec
	err = fileio.GuardFaultIn(c.locate, func() (err error) { s, err = buildSpec(c, p, fc, opt.Quant); return err })
	if err != nil {
		return nil, err
	}
	pl := &planner{s: s, nodes: nodes}

	// Pass 1: resolve and shape-check every tensor, build the NUMA plan,
	// find each tensor's last use and count the input bytes.
	rec := &cflowfmt.NUMAPlan{Version: 1, Nodes: nodes}
	lastUse := map[*tensor]int{}
	var inBytes int64
	var groups []vflowfmt.Group
	if format == FormatVFlow {
		groups = vflowfmt.GroupsFor(&s.h, s.md)
	}
	ly := &layouter{c: c, s: s, pl: pl, nm: s.p.names, rec: rec, groups: groups}
	ly.visit = func(o *op) error {
		switch o.kind {
		case opTile:
			lastUse[o.t] = o.seq
			inBytes += int64(o.th.Rows) * int64(o.th.Cols) * int64(o.t.dt.size())
		case opNorm:
			lastUse[o.t] = o.seq
			inBytes += o.t.bytes()
		}
		return nil
	}
	if err := ly.run(); err != nil {
		return nil, err
	}
	if err := fileio.GuardFaultIn(c.locate, func() error { return checkClaimed(c, s) }); err != nil {
		return nil, err
	}
	pj, err := json.Marshal(rec)
	if err != nil {
		return nil, err
	}
	s.md.SetBytes(cflowfmt.KeyNUMAPlan, pj)

	// Pass 2: the real thing.
	w, err := createWriter(format, output, s)
	if err != nil {
		return nil, err
	}
	prog := newProgress(opt.Progress, opt.ProgressBar, inBytes)
	workers := opt.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	em := &emitter{
		ly:       &layouter{c: c, s: s, pl: pl, nm: ly.nm, groups: groups},
		w:        w,
		workers:  workers,
		window:   8 * workers,
		lastUse:  lastUse,
		locate:   c.locate,
		progress: prog.add,
	}
	if opt.onProgress != nil {
		em.progress = func(n int64) { prog.add(n); opt.onProgress() }
	}
	if err := em.run(ctx); err != nil {
		w.Abort()
		prog.finish()
		return nil, err
	}
	if err := w.Close(); err != nil {
		prog.finish()
		return nil, err
	}
	prog.finish()
	st, err := os.Stat(output)
	if err != nil {
		return nil, err
	}
	return &Result{Input: input, Output: output, Format: format, Architecture: s.p.name, Header: s.h,
		InputBytes: inBytes, OutputBytes: st.Size(), Elapsed: time.Since(start), Plan: rec, Notes: c.notes, Requantized: requantized}, nil
}

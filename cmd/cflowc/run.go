package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/cflow-dev/cflow/cflowfmt"
	"github.com/cflow-dev/cflow/cflowfmt/tokmeta"
	"github.com/cflow-dev/cflow/engine"
	"github.com/cflow-dev/cflow/engine/expertio"
	"github.com/cflow-dev/cflow/generate"
	"github.com/cflow-dev/cflow/internal/fileio"
	"github.com/cflow-dev/cflow/quant"
	"github.com/cflow-dev/cflow/tokenizer"
	"github.com/cflow-dev/cflow/verify"
	"github.com/cflow-dev/cflow/vflowfmt"
	"github.com/urfave/cli/v2"
)

func init() {
	commands = append(commands, &cli.Command{
		Name:      "run",
		Usage:     "decode from a prompt, streaming text (or ids) as it goes",
		ArgsUsage: "FILE (--prompt TEXT | --prompt-ids 1,2,3)",
		Description: "Feeds the prompt (BOS first when the tokenizer has one), then samples up to --max-tokens\n" +
			"tokens, stopping at EOS or a --stop string (not printed). Sampling: penalties, temperature\n" +
			"(0 = greedy), top-k, top-p, min-p, in that order; without --seed a seed is chosen and printed.\n" +
			"At the end prints prompt and decode tok/s, effective weight GB/s and the kernel on stderr.\n" +
			"--trace-out writes the run as a reference trace (docs/TRACE.md schema).",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "prompt", Usage: "prompt text (needs a tokenizer in the file)"},
			&cli.StringFlag{Name: "prompt-ids", Usage: "comma-separated token ids, fed as is"},
			&cli.BoolFlag{Name: "chat", Usage: "apply the file's chat template to --prompt as one user turn (with --system)"},
			&cli.StringFlag{Name: "system", Usage: "system message for --chat"},
			&cli.IntFlag{Name: "max-tokens", Aliases: []string{"n"}, Value: 128, Usage: "tokens to generate (≥ 1)"},
			&cli.StringSliceFlag{Name: "stop", Usage: "stop when the generated text contains this string (repeatable; not printed)"},
			&cli.IntFlag{Name: "threads", Aliases: []string{"t"}, Value: runtime.NumCPU(), Usage: "decode threads"},
			&cli.StringFlag{Name: "trace-out", Usage: "write a trace (docs/TRACE.md schema) of this run to this file"},
			&cli.StringFlag{Name: "kernel", Usage: "dot kernel: " + strings.Join(quant.KernelNames(), ", ") +
				" (default: the fastest, or its float-activation twin with --trace-out; a trace recorded on an int8 kernel compares kernels, it is no reference)"},
			&cli.StringFlag{Name: "expert-io", Value: "mmap", Usage: "expert fetch: mmap (page cache), sync (O_DIRECT reads blocking at the routing layer) or direct (O_DIRECT reads overlapped until the injection layer)"},
		}, append(samplingFlags(), cacheTypeFlags(engine.KVF16)...)...),
		Action: runRun,
	})
}

// samplingFlags are the sampler's flags, shared by every command that
// samples; samplingParams reads them back.
func samplingFlags() []cli.Flag {
	d := generate.DefaultParams()
	return []cli.Flag{
		&cli.Float64Flag{Name: "temperature", Value: d.Temperature, Usage: fmt.Sprintf("sampling temperature in [0, %d]; 0 = greedy", generate.MaxTemperature)},
		&cli.IntFlag{Name: "top-k", Value: d.TopK, Usage: "keep the K most probable tokens; 0 = off"},
		&cli.Float64Flag{Name: "top-p", Value: d.TopP, Usage: "nucleus sampling mass in [0, 1]; 1 = off"},
		&cli.Float64Flag{Name: "min-p", Value: d.MinP, Usage: "drop tokens below this fraction of the top token's probability, in [0, 1]; 0 = off"},
		&cli.Float64Flag{Name: "repeat-penalty", Value: d.RepeatPenalty, Usage: "penalty for tokens in the last --repeat-last-n, in [0.01, 100]; 1 = off"},
		&cli.Float64Flag{Name: "frequency-penalty", Value: d.FrequencyPenalty, Usage: "subtract count × this from repeated tokens' logits, in [-2, 2]"},
		&cli.Float64Flag{Name: "presence-penalty", Value: d.PresencePenalty, Usage: "subtract this from seen tokens' logits, in [-2, 2]"},
		&cli.IntFlag{Name: "repeat-last-n", Value: d.PenaltyLastN, Usage: "tokens the penalties look back over; 0 = off"},
		&cli.Uint64Flag{Name: "seed", Usage: "sampling seed", DefaultText: "chosen at random and printed"},
	}
}

// samplingParams reads samplingFlags; chosen reports a seed picked here.
func samplingParams(c *cli.Context) (p generate.Params, chosen bool) {
	p = generate.Params{Temperature: c.Float64("temperature"), TopK: c.Int("top-k"), TopP: c.Float64("top-p"),
		MinP: c.Float64("min-p"), RepeatPenalty: c.Float64("repeat-penalty"), FrequencyPenalty: c.Float64("frequency-penalty"),
		PresencePenalty: c.Float64("presence-penalty"), PenaltyLastN: c.Int("repeat-last-n"), Seed: c.Uint64("seed")}
	if !c.IsSet("seed") {
		p.Seed, chosen = rand.Uint64(), true
	}
	return p, chosen
}

// flagError turns a generate.ParamError into a usage error naming the
// flag (top_p → --top-p).
func flagError(cmd string, err error) error {
	var pe *generate.ParamError
	if errors.As(err, &pe) {
		v := fmt.Sprint(pe.Value)
		switch pe.Value.(type) {
		case string, []string: // quoted, so an empty --stop "" shows as [""], not []
			v = fmt.Sprintf("%q", pe.Value)
		}
		return cli.Exit(fmt.Sprintf("%s: --%s %s: %s", cmd, strings.ReplaceAll(pe.Param, "_", "-"), v, pe.Reason), exitUsage)
	}
	return cli.Exit(cmd+": "+err.Error(), exitUsage)
}

// openRunModel opens a .cflow or .vflow file (picked by magic) as the
// runtime's Model.
func openRunModel(path string) (*cflowfmt.Model, error) { return vflowfmt.OpenModel(path) }

func parseIDs(s string) ([]int, error) {
	var ids []int
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' }) {
		v, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Errorf("--prompt-ids: %q is not a token id", f)
		}
		ids = append(ids, v)
	}
	return ids, nil
}

// runPrompt is the prompt run feeds: --prompt-ids as given, else BOS and
// the encoded --prompt.
func runPrompt(c *cli.Context, tk tokenizer.Tokenizer, md *cflowfmt.Metadata, vocab int) ([]int, error) {
	switch {
	case c.IsSet("prompt") && c.IsSet("prompt-ids"):
		return nil, errors.New("give --prompt or --prompt-ids, not both")
	case c.Bool("chat") && !c.IsSet("prompt"):
		return nil, errors.New("--chat needs --prompt")
	case c.IsSet("system") && !c.Bool("chat"):
		return nil, errors.New("--system applies to --chat (the file's chat template), which was not given")
	case c.Bool("chat"):
		return chatPrompt(md, vocab, c.String("system"), c.String("prompt"))
	case c.IsSet("prompt-ids"):
		return parseIDs(c.String("prompt-ids"))
	case tk == nil && c.IsSet("prompt"):
		return nil, errors.New("this file has no tokenizer, so --prompt cannot be encoded; pass token ids with --prompt-ids")
	case tk != nil:
		return generate.EncodePrompt(tk, c.String("prompt"))
	}
	return nil, nil
}

func runRun(c *cli.Context) error {
	if c.NArg() != 1 {
		return cli.Exit("run: give one model FILE", exitUsage)
	}
	m, err := openRunModel(c.Args().First())
	if err != nil {
		return cli.Exit(err.Error(), exitUsage)
	}
	defer m.Close()
	h := &m.Header
	tk, err := tokmeta.Load(m.Meta, int(h.VocabSize))
	if err != nil && !errors.Is(err, tokenizer.ErrNoTokenizer) {
		return cli.Exit("run: "+err.Error(), exitUsage)
	}
	prompt, err := runPrompt(c, tk, m.Meta, int(h.VocabSize))
	if err != nil {
		return cli.Exit("run: "+err.Error(), exitUsage)
	}
	if len(prompt) == 0 {
		return cli.Exit("run: empty prompt and no BOS token known; pass --prompt-ids", exitUsage)
	}
	params, chosen := samplingParams(c)
	seq, err := generate.NewSequence(generate.Request{Prompt: prompt, MaxTokens: c.Int("max-tokens"), Ctx: int(h.MaxSeqLen),
		Params: params, StopIDs: generate.StopIDs(tk), Stop: c.StringSlice("stop"), Tokenizer: tk, TopLogprobs: -1}, int(h.VocabSize), int(h.MaxSeqLen))
	if err != nil {
		return flagError("run", err)
	}
	opt, err := runEngineOptions(c)
	if err != nil {
		return err
	}
	defer onOneCPU(c.Int("threads"))()
	var tr *generate.Trace
	if c.IsSet("trace-out") {
		tr = generate.NewTrace(m, prompt)
	}
	e, err := engine.New(m, opt)
	if err != nil {
		return cli.Exit(err.Error(), exitUsage)
	}
	defer e.Close()
	if chosen && !params.Greedy() {
		fmt.Fprintf(os.Stderr, "seed %d (pass --seed %d to repeat this sample)\n", params.Seed, params.Seed)
	}
	if err := runDecode(e, seq, tk, prompt, tr, opt.ExpertIO, c.Int("threads")); err != nil {
		return err
	}
	if tr != nil {
		if err := writeTrace(c.String("trace-out"), tr); err != nil {
			return lateExit("run: --trace-out", err)
		}
	}
	return nil
}

// runEngineOptions reads the engine's flags: threads, expert I/O, the
// kernel (a trace is recorded on the float-activation twin unless
// --kernel says otherwise), after checking --trace-out's path.
func runEngineOptions(c *cli.Context) (engine.Options, error) {
	xio, err := expertio.Parse(c.String("expert-io"))
	if err != nil {
		return engine.Options{}, cli.Exit("run: --expert-io: "+err.Error(), exitUsage)
	}
	if err := checkThreads("run", c.Int("threads")); err != nil {
		return engine.Options{}, err
	}
	if c.IsSet("trace-out") {
		if err := checkOutput("run", "--trace-out", c.String("trace-out"), c.Args().First()); err != nil {
			return engine.Options{}, err
		}
	}
	if t := c.Int("threads"); t > runtime.GOMAXPROCS(0) {
		runtime.GOMAXPROCS(t)
	}
	opt := engine.Options{Threads: c.Int("threads"), ExpertIO: xio}
	if err := cacheTypes(c, "run", &opt); err != nil {
		return engine.Options{}, err
	}
	if c.IsSet("trace-out") {
		// A trace is a reference: an f32 cache unless the flags say otherwise.
		if !c.IsSet("cache-type-k") {
			opt.CacheK = engine.KVF32
		}
		if !c.IsSet("cache-type-v") {
			opt.CacheV = engine.KVF32
		}
		// A trace is a reference: keep activations in f32 so replaying it
		// needs no allowance for int8 activation rounding.
		opt.Kernel = verify.Kernel()
	}
	if c.IsSet("kernel") {
		k, err := quant.KernelByName(c.String("kernel"))
		if err != nil {
			return engine.Options{}, cli.Exit("run: --kernel: "+err.Error(), exitUsage)
		}
		opt.Kernel = k
	}
	return opt, nil
}

// runDecode streams the prompt's text and each sampled token to stdout
// and the run's figures to stderr.
func runDecode(e *engine.Engine, seq *generate.Sequence, tk tokenizer.Tokenizer, prompt []int, tr *generate.Trace, xio expertio.Mode, threads int) error {
	out := bufio.NewWriter(os.Stdout)
	if tk != nil {
		out.Write(generate.Text(tk, -1, prompt))
		out.Flush()
	}
	// The first sampled token comes right after the prompt: the expert
	// I/O counters then split prompt from decode.
	var xPrompt expertio.Stats
	st, err := generate.Run(context.Background(), e, seq, generate.Options{Trace: tr, OnToken: func(t generate.Token) error {
		if len(seq.Generated()) == 1 && t.ID >= 0 {
			xPrompt = e.ExpertIOStats()
		}
		switch {
		case tk != nil:
			out.Write(t.Text)
		case t.ID >= 0:
			fmt.Fprintf(out, "%d ", t.ID)
		}
		return out.Flush()
	}})
	fmt.Fprintln(out)
	out.Flush()
	if err != nil {
		return lateExit("run", err)
	}
	if st.Reason != "max tokens" {
		fmt.Fprintf(os.Stderr, "stopped: %s\n", st.Reason)
	}
	fmt.Fprintf(os.Stderr, "%s; kernel %s, %d threads\n", st, e.Kernel(), threads)
	fmt.Fprintln(os.Stderr, e.NUMA()) // topology, plan use and weight placement
	if xs := e.ExpertIOStats(); xio != expertio.Mmap && xs.Mode == xio {
		printExpertIO(xs.Sub(xPrompt), int64(st.DecodeTokens), st.DecodeTime)
	}
	return nil
}

// writeTrace writes tr to path through a sink (temp file, then rename), so
// a failed write leaves no partial trace.
func writeTrace(path string, tr *generate.Trace) error {
	s, err := fileio.CreateSink(path)
	if err != nil {
		return err
	}
	if err := tr.Write(s); err != nil {
		s.Abort()
		return err
	}
	return s.Commit()
}

// printExpertIO reports the staged expert tier over the decode tokens:
// how it read (O_DIRECT or the buffered fallback and why), what it moved,
// and per token the decode time, the time the decode thread stalled on
// expert reads and the time the disk was busy — the C, IO and IO_eff of
// docs/PERFORMANCE.md's expert I/O model.
func printExpertIO(x expertio.Stats, tokens int64, d time.Duration) {
	if tokens <= 0 {
		return
	}
	per := func(v time.Duration) float64 { return float64(v.Microseconds()) / 1e3 / float64(tokens) }
	fmt.Fprintf(os.Stderr, "expert I/O %s: %d reads, %.1f MB/token; per token %.2f ms decode, %.2f ms stalled on expert reads, %.2f ms disk busy\n",
		x.Describe(), x.Reads, float64(x.Bytes)/1e6/float64(tokens), per(d), per(x.Stall), per(x.Busy))
}

package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	goruntime "runtime"
	"strconv"
	"strings"
	"time"

	"github.com/cflow-dev/cflow/cflowfmt"
	"github.com/cflow-dev/cflow/quant"
	cfrt "github.com/cflow-dev/cflow/runtime"
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
			"tokens, stopping at EOS. At the end prints prompt and decode tok/s, effective weight GB/s and\n" +
			"the kernel on stderr. --trace-out writes the run as a reference trace (TRACE.md schema).",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "prompt", Usage: "prompt text (needs a tokenizer in the file)"},
			&cli.StringFlag{Name: "prompt-ids", Usage: "comma-separated token ids, fed as is"},
			&cli.IntFlag{Name: "max-tokens", Aliases: []string{"n"}, Value: 128, Usage: "tokens to generate"},
			&cli.Float64Flag{Name: "temperature", Value: 0.8, Usage: "sampling temperature; 0 = greedy"},
			&cli.Float64Flag{Name: "top-p", Value: 0.9, Usage: "nucleus sampling mass; 1 = off"},
			&cli.Uint64Flag{Name: "seed", Usage: "sampling seed (0 = from the clock)"},
			&cli.IntFlag{Name: "threads", Aliases: []string{"t"}, Value: goruntime.NumCPU(), Usage: "decode threads"},
			&cli.StringFlag{Name: "trace-out", Usage: "write a TRACE.md trace of this run to this file"},
			&cli.StringFlag{Name: "expert-io", Value: "mmap", Usage: "expert fetch: mmap (page cache), sync (O_DIRECT reads blocking at the routing layer) or direct (O_DIRECT reads overlapped until the injection layer)"},
		},
		Action: runRun,
	})
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

// traceWeights names what a trace of this file's arithmetic was computed
// with (a quantized file's values are exactly the *_replay weights).
func traceWeights(q quant.Type) string {
	switch q {
	case quant.Q4_0:
		return "q4_replay"
	case quant.Q8_0:
		return "q8_replay"
	}
	return "f32"
}

func runRun(c *cli.Context) error {
	if c.NArg() != 1 {
		return cli.Exit("run: give one model FILE", exitUsage)
	}
	if c.IsSet("prompt") && c.IsSet("prompt-ids") {
		return cli.Exit("run: give --prompt or --prompt-ids, not both", exitUsage)
	}
	m, err := openRunModel(c.Args().First())
	if err != nil {
		return cli.Exit(err.Error(), exitUsage)
	}
	defer m.Close()
	h := &m.Header
	tk, err := tokenizer.FromMetadata(m.Meta, int(h.VocabSize))
	if err != nil && !errors.Is(err, tokenizer.ErrNoTokenizer) {
		return cli.Exit("run: "+err.Error(), exitUsage)
	}
	var prompt []int
	switch {
	case c.IsSet("prompt-ids"):
		if prompt, err = parseIDs(c.String("prompt-ids")); err != nil {
			return cli.Exit("run: "+err.Error(), exitUsage)
		}
	case tk == nil && c.IsSet("prompt"):
		return cli.Exit("run: this file has no tokenizer, so --prompt cannot be encoded; pass token ids with --prompt-ids", exitUsage)
	case tk != nil:
		if tk.BOS() >= 0 {
			prompt = append(prompt, tk.BOS())
		}
		ids, err := tk.Encode(c.String("prompt"))
		if err != nil {
			return cli.Exit("run: "+err.Error(), exitUsage)
		}
		prompt = append(prompt, ids...)
	}
	if len(prompt) == 0 {
		return cli.Exit("run: empty prompt and no BOS token known; pass --prompt-ids", exitUsage)
	}
	for _, id := range prompt {
		if id < 0 || id >= int(h.VocabSize) {
			return cli.Exit(fmt.Sprintf("run: token %d outside the vocabulary of %d", id, h.VocabSize), exitUsage)
		}
	}
	xio, err := cfrt.ParseExpertIO(c.String("expert-io"))
	if err != nil {
		return cli.Exit("run: --expert-io: "+err.Error(), exitUsage)
	}
	if c.Int("threads") < 1 || c.Int("max-tokens") < 0 {
		return cli.Exit("run: --threads must be ≥ 1 and --max-tokens ≥ 0", exitUsage)
	}
	if t := c.Int("threads"); t > goruntime.GOMAXPROCS(0) {
		goruntime.GOMAXPROCS(t)
	}
	if c.IsSet("trace-out") {
		// A trace is a reference: keep activations in f32 so replaying it
		// needs no allowance for int8 activation rounding.
		verify.EnsureFloatKernel()
	}
	e, err := cfrt.New(m, cfrt.Options{Threads: c.Int("threads"), ExpertIO: xio})
	if err != nil {
		return cli.Exit(err.Error(), exitUsage)
	}
	defer e.Close()
	seed := c.Uint64("seed")
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	smp := cfrt.NewSampler(float32(c.Float64("temperature")), float32(c.Float64("top-p")), seed)
	name := m.Meta.String(cflowfmt.KeyName, m.Meta.String(cflowfmt.KeyArchitecture, ""))
	tr := &verify.Trace{Schema: verify.Schema, Model: name, Architecture: m.Meta.String(cflowfmt.KeyArchitecture, ""),
		Weights: traceWeights(h.QuantType), Prompt: prompt, Generated: []int{}}
	out := bufio.NewWriter(os.Stdout)
	emit := func(prev, id int) {
		if tk != nil {
			out.Write(tk.Piece(prev, id))
		} else {
			fmt.Fprintf(out, "%d ", id)
		}
		out.Flush()
	}
	step := func(tok int) ([]float32, error) {
		pos := e.Pos()
		logits, err := e.Step(tok)
		if err == nil && c.IsSet("trace-out") {
			tr.Steps = append(tr.Steps, verify.Record(pos, tok, e.Observation(), logits))
		}
		return logits, err
	}
	var logits []float32
	t0 := time.Now()
	for i, tok := range prompt {
		if logits, err = step(tok); err != nil {
			return cli.Exit("run: "+err.Error(), exitError)
		}
		if tk != nil {
			prev := -1
			if i > 0 {
				prev = prompt[i-1]
			}
			emit(prev, tok)
		}
	}
	tPrompt := time.Since(t0)
	bPrompt := e.Stats().Total.Sum()
	xPrompt := e.ExpertIOStats()
	t1 := time.Now()
	prev, stop := prompt[len(prompt)-1], ""
	for n := 0; n < c.Int("max-tokens"); n++ {
		next := smp.Sample(logits)
		tr.Generated = append(tr.Generated, next)
		emit(prev, next)
		if tk != nil && next == tk.EOS() {
			stop = "EOS"
			break
		}
		if n+1 == c.Int("max-tokens") {
			break
		}
		if logits, err = step(next); err != nil {
			if errors.Is(err, cfrt.ErrContextFull) {
				stop = "context full"
				break
			}
			return cli.Exit("run: "+err.Error(), exitError)
		}
		prev = next
	}
	tDecode := time.Since(t1)
	fmt.Fprintln(out)
	out.Flush()
	st := e.Stats()
	decoded := st.Tokens - int64(len(prompt))
	rate := func(n int64, d time.Duration) float64 {
		if d <= 0 {
			return 0
		}
		return float64(n) / d.Seconds()
	}
	if stop != "" {
		fmt.Fprintf(os.Stderr, "stopped: %s\n", stop)
	}
	fmt.Fprintf(os.Stderr, "prompt: %d tokens, %.2f tok/s; decode: %d tokens, %.2f tok/s; effective weight bandwidth %.2f GB/s (%.2f MB/token); kernel %s, %d threads\n",
		len(prompt), rate(int64(len(prompt)), tPrompt), len(tr.Generated), rate(decoded, tDecode),
		rate(st.Total.Sum()-bPrompt, tDecode)/1e9, float64(st.Last.Sum())/1e6, cfrt.KernelName(), c.Int("threads"))
	fmt.Fprintln(os.Stderr, e.NUMA()) // topology, plan use and weight placement
	if xs := e.ExpertIOStats(); xio != cfrt.ExpertIOMmap && xs.Mode == xio {
		printExpertIO(xs.Sub(xPrompt), decoded, tDecode)
	}
	if p := c.String("trace-out"); p != "" {
		f, err := os.Create(p)
		if err != nil {
			return cli.Exit("run: "+err.Error(), exitError)
		}
		if err := tr.Write(f); err != nil {
			f.Close()
			return cli.Exit("run: "+err.Error(), exitError)
		}
		if err := f.Close(); err != nil {
			return cli.Exit("run: "+err.Error(), exitError)
		}
	}
	return nil
}

// printExpertIO reports the staged expert tier over the decode tokens:
// how it read (O_DIRECT or the buffered fallback and why), what it moved,
// and per token the decode time, the time the decode thread stalled on
// expert reads and the time the disk was busy — the C, IO and IO_eff of
// docs/PERFORMANCE.md's expert I/O model.
func printExpertIO(x cfrt.ExpertIOStats, tokens int64, d time.Duration) {
	if tokens <= 0 {
		return
	}
	per := func(v time.Duration) float64 { return float64(v.Microseconds()) / 1e3 / float64(tokens) }
	fmt.Fprintf(os.Stderr, "expert I/O %s: %d reads, %.1f MB/token; per token %.2f ms decode, %.2f ms stalled on expert reads, %.2f ms disk busy\n",
		x.Describe(), x.Reads, float64(x.Bytes)/1e6/float64(tokens), per(d), per(x.Stall), per(x.Busy))
}

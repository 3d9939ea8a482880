package main

import (
	"fmt"
	"os"
	"runtime"
	"time"

	"github.com/cflow-dev/cflow/engine"
	"github.com/cflow-dev/cflow/ppl"
	"github.com/cflow-dev/cflow/verify"
	"github.com/urfave/cli/v2"
)

func init() {
	commands = append(commands, &cli.Command{
		Name:      "ppl",
		Usage:     "perplexity and bits per byte of a text file under the model",
		ArgsUsage: "FILE --text TEXT.txt [--ctx N] [--kl-base BASE.cflow] [--json]",
		Description: "Tokenizes the text once with the file's tokenizer (no BOS), splits the ids into consecutive\n" +
			"chunks of ctx−1 and evaluates each chunk as [BOS]+chunk from position 0, predicting every chunk\n" +
			"token from its prefix. Prints exp(mean NLL) over all chunk tokens and total NLL / ln 2 / text\n" +
			"bytes. ctx defaults to the model's maximum sequence length, at most 512. golden/train/eval.py\n" +
			"computes the same numbers with the PyTorch reference.\n\n" +
			"--kl-base BASE scores the same chunks under BASE too (normally the F32 file of the same\n" +
			"checkpoint, with the same tokenizer) and reports the perplexity ratio FILE/BASE, the mean\n" +
			"KL(BASE ‖ FILE) of the next-token distributions in nats, and the fraction of positions where\n" +
			"both pick the same top token — TRACE.md's quantization-quality figures, as llama.cpp's\n" +
			"llama-perplexity --kl-divergence reports them.",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "text", Usage: "text file to evaluate (required)"},
			&cli.IntFlag{Name: "ctx", Usage: "context per chunk, BOS included (0: the model's maximum, at most 512)"},
			&cli.StringFlag{Name: "kl-base", Usage: "also score the text under this file and compare (ppl_ratio, mean_kld, same_top)"},
			&cli.BoolFlag{Name: "json", Usage: "print {ppl, bits_per_byte, tokens, ...} as JSON (with --kl-base: {ppl, base_ppl, ppl_ratio, mean_kld, same_top, ...})"},
			&cli.BoolFlag{Name: "float-kernel", Usage: "keep activations in f32 (the kernel verify uses) instead of the default kernel"},
			&cli.IntFlag{Name: "threads", Aliases: []string{"t"}, Value: runtime.NumCPU(), Usage: "decode threads"},
		}, cacheTypeFlags(engine.KVF16)...),
		Action: runPPL,
	})
}

func runPPL(c *cli.Context) error {
	if c.NArg() != 1 {
		return cli.Exit("ppl: give one model FILE", exitUsage)
	}
	if c.String("text") == "" {
		return cli.Exit("ppl: --text is required", exitUsage)
	}
	if c.Int("ctx") < 0 {
		return cli.Exit(fmt.Sprintf("ppl: --ctx %d must be ≥ 0", c.Int("ctx")), exitUsage)
	}
	if err := checkThreads("ppl", c.Int("threads")); err != nil {
		return err
	}
	defer onOneCPU(c.Int("threads"))()
	text, err := readArgFile(c.String("text"))
	if err != nil {
		return cli.Exit("ppl: "+err.Error(), exitUsage)
	}
	m, err := openRunModel(c.Args().First())
	if err != nil {
		return cli.Exit("ppl: "+err.Error(), exitUsage)
	}
	defer m.Close()
	if t := c.Int("threads"); t > runtime.GOMAXPROCS(0) {
		runtime.GOMAXPROCS(t)
	}
	ids, bos, err := ppl.Tokenize(m, text)
	if err != nil {
		return cli.Exit("ppl: "+err.Error(), exitUsage)
	}
	if bos < 0 {
		return cli.Exit("ppl: the file's tokenizer has no BOS token, which the protocol puts before every chunk", exitUsage)
	}
	ctx := c.Int("ctx")
	if ctx == 0 {
		ctx = ppl.DefaultCtx(&m.Header)
	}
	opt := engine.Options{Threads: c.Int("threads")}
	if err := cacheTypes(c, "ppl", &opt); err != nil {
		return err
	}
	if c.Bool("float-kernel") {
		opt.Kernel = verify.Kernel()
	}
	e, err := engine.New(m, opt)
	if err != nil {
		return cli.Exit("ppl: "+err.Error(), exitUsage)
	}
	defer e.Close()
	var progress func(int, int)
	if bar := progressBar("evaluating", false); bar != nil && !c.Bool("json") {
		progress = func(done, total int) { bar(int64(done), int64(total)) }
	}
	if b := c.String("kl-base"); b != "" {
		return comparePPL(c, e, opt, b, ids, bos, ctx, len(text), progress)
	}
	return evaluatePPL(c, e, ids, bos, ctx, len(text), progress)
}

// comparePPL is ppl --kl-base: the base file is opened and run beside the
// file on the same chunks.
func comparePPL(c *cli.Context, e *engine.Engine, opt engine.Options, basePath string, ids []int, bos, ctx, textBytes int, progress func(int, int)) error {
	bm, err := openRunModel(basePath)
	if err != nil {
		return cli.Exit("ppl: --kl-base: "+err.Error(), exitUsage)
	}
	defer bm.Close()
	be, err := engine.New(bm, opt) // the same kernel and threads as the file's engine
	if err != nil {
		return cli.Exit("ppl: --kl-base: "+err.Error(), exitUsage)
	}
	defer be.Close()
	t0 := time.Now()
	r, err := ppl.Compare(e, be, ids, bos, ctx, textBytes, progress)
	if progress != nil {
		fmt.Fprintln(os.Stderr)
	}
	if err != nil {
		return cli.Exit(err.Error(), exitUsage)
	}
	el := time.Since(t0)
	if c.Bool("json") {
		return printJSON(r)
	}
	fmt.Printf("ppl %.4f  base ppl %.4f  ratio %.5f  mean KL(base‖file) %.5f nats  same top token %.2f%%  (max KL %.4f; %d tokens, %d chunks, ctx %d)\n",
		r.PPL, r.BasePPL, r.PPLRatio, r.MeanKLD, 100*r.SameTop, r.MaxKLD, r.Tokens, r.Chunks, r.Ctx)
	fmt.Fprintf(os.Stderr, "%.1f s for both files, kernel %s, %d threads\n", el.Seconds(), e.Kernel(), c.Int("threads"))
	return nil
}

// evaluatePPL runs the perplexity protocol on e and prints its figures.
func evaluatePPL(c *cli.Context, e *engine.Engine, ids []int, bos, ctx, textBytes int, progress func(int, int)) error {
	t0 := time.Now()
	r, err := ppl.Evaluate(e, ids, bos, ctx, textBytes, progress)
	if err != nil {
		return cli.Exit(err.Error(), exitUsage)
	}
	el := time.Since(t0)
	if c.Bool("json") {
		return printJSON(r)
	}
	fmt.Printf("ppl %.4f  bits/byte %.4f  loss %.5f nats/token  (%d tokens, %d bytes, %d chunks, ctx %d)\n",
		r.PPL, r.BitsPerByte, r.Loss, r.Tokens, r.Bytes, r.Chunks, r.Ctx)
	fmt.Fprintf(os.Stderr, "%.1f s, %.0f tok/s, kernel %s, %d threads\n", el.Seconds(),
		float64(r.Tokens)/max(el.Seconds(), 1e-9), e.Kernel(), c.Int("threads"))
	return nil
}

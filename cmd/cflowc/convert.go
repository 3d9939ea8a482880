package main

import (
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/urfave/cli/v2"
	"golang.org/x/term"

	"github.com/cflow-dev/cflow/cflowfmt"
	"github.com/cflow-dev/cflow/convert"
	"github.com/cflow-dev/cflow/gguf"
	"github.com/cflow-dev/cflow/quant"
)

// convert is the front door: checkpoint in, plan-ordered tile file out.
// All logic is in package convert; this file only parses flags.
func init() {
	commands = append(commands, &cli.Command{
		Name:      "convert",
		Usage:     "convert an HF safetensors directory, a GGUF (or ollama:NAME[:TAG]) or llama2.c .bin to .cflow or .vflow",
		ArgsUsage: "INPUT",
		Description: "OUT's extension (.cflow, .vflow) picks the format. Architectures: " +
			strings.Join(convert.Architectures(), ", ") + ".",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "output file (.cflow or .vflow)", Required: true},
			&cli.StringFlag{Name: "model", Usage: "force an architecture preset instead of detecting it from config.json"},
			&cli.StringFlag{Name: "quant", Value: "q4_0", Usage: "q4_0, q8_0 or f32 (norms and router stay f32)"},
			&cli.IntFlag{Name: "numa-nodes", Usage: "NUMA nodes to plan shards for", DefaultText: "the nodes in /sys/devices/system/node"},
			&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "no progress bar and no summary line"},
			&cli.StringFlag{Name: "requant", Usage: "dequantize a GGUF's tensors of types cflow does not carry (Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K) and quantize them as TYPE (q4_0, q8_0 or f32; sets --quant), reporting the error"},
			&cli.StringFlag{Name: "tokenizer", Usage: "attach this tokenizer: a tokenizer.json (tokenizer_config.json beside it comes along) or a llama2.c score table (tokenizer.bin, tok512.bin)"},
		},
		Action: runConvert,
	})
}

func runConvert(c *cli.Context) error {
	if c.NArg() != 1 {
		return cli.Exit("convert: want exactly one INPUT (checkpoint directory, .gguf, ollama:NAME or .bin)", exitUsage)
	}
	q, err := quant.ParseType(c.String("quant"))
	if err != nil {
		return cli.Exit("convert: "+err.Error(), exitUsage)
	}
	if c.IsSet("requant") {
		rq, err := quant.ParseType(c.String("requant"))
		if err != nil {
			return cli.Exit("convert: --requant: "+err.Error(), exitUsage)
		}
		if c.IsSet("quant") && rq != q {
			return cli.Exit(fmt.Sprintf("convert: --requant %s differs from --quant %s: a file's matrices share one codec", rq, q), exitUsage)
		}
		q = rq
	}
	if n := c.Int("numa-nodes"); c.IsSet("numa-nodes") && (n < 1 || n > cflowfmt.MaxNUMANodes) {
		return cli.Exit(fmt.Sprintf("convert: --numa-nodes %d outside 1..%d", n, cflowfmt.MaxNUMANodes), exitUsage)
	}
	quiet := c.Bool("quiet")
	opt := convert.Options{
		Model:       c.String("model"),
		Quant:       q,
		NUMANodes:   c.Int("numa-nodes"),
		Tokenizer:   c.String("tokenizer"),
		Requant:     c.IsSet("requant"),
		Progress:    os.Stderr,
		ProgressBar: !quiet && term.IsTerminal(int(os.Stderr.Fd())),
	}
	// Ctrl-C cancels the conversion, which then removes its temp file.
	ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	defer stop()
	input, err := convertInput(c.Args().First())
	if err != nil {
		return cli.Exit("convert: "+err.Error(), exitUsage)
	}
	res, err := convert.Convert(ctx, input, c.String("output"), opt)
	if err != nil {
		return cli.Exit("convert: "+err.Error(), exitUsage)
	}
	dropOutputCache(c.String("output"))
	for _, n := range res.Notes {
		fmt.Fprintln(os.Stderr, "note:", n)
	}
	for _, l := range convert.RequantSummary(res.Requantized) {
		fmt.Fprintln(os.Stderr, l)
	}
	if !quiet {
		fmt.Fprintln(os.Stderr, res.Summary())
	}
	return nil
}

// convertInput resolves ollama:NAME[:TAG] to its GGUF in ollama's store;
// any other input is a path.
func convertInput(arg string) (string, error) {
	if !strings.HasPrefix(arg, gguf.OllamaPrefix) {
		return arg, nil
	}
	dir, err := gguf.OllamaModelsDir()
	if err != nil {
		return "", err
	}
	return gguf.ResolveOllama(arg, dir)
}

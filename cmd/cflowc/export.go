package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/cflow-dev/cflow/gguf"
	"github.com/cflow-dev/cflow/internal/fileio"
	"github.com/cflow-dev/cflow/vflowfmt"
	"github.com/urfave/cli/v2"
)

func init() {
	commands = append(commands, &cli.Command{
		Name:  "export",
		Usage: "write a model in another engine's format (for side-by-side comparisons)",
		Subcommands: []*cli.Command{{
			Name:      "gguf",
			Usage:     "GGUF v3 for llama.cpp (llama, qwen2, qwen3, qwen3moe, gemma3, gemma4), same weights and types",
			ArgsUsage: "-o OUT.gguf FILE",
			Description: "Q4_0/Q8_0 blocks are copied from the tiles (no requantization), q/k rows are\n" +
				"permuted to GGUF's adjacent-pair RoPE order, norms and router stay F32. Matrices whose\n" +
				"row length is not a multiple of 32 are written as F32 holding the dequantized values\n" +
				"(ggml blocks cannot be padded). The file's tokenizer becomes llama.cpp's vocabulary\n" +
				"(byte-level BPE as gpt2 with merges, SentencePiece-style as llama); a file without one\n" +
				"gets placeholder pieces \"[i]\", so llama.cpp prompts and outputs are then token ids.",
			Flags: []cli.Flag{
				&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Required: true, Usage: "output .gguf path"},
				&cli.BoolFlag{Name: "f32", Usage: "write every matrix as F32 (dequantized)"},
				&cli.StringFlag{Name: "name", Usage: "general.name (default: the model's name)"},
			},
			Action: runExportGGUF,
		}},
	})
}

func runExportGGUF(c *cli.Context) error {
	if c.NArg() != 1 {
		return cli.Exit(fmt.Sprintf("export gguf: give one FILE (got %d) and -o OUT.gguf", c.NArg()), exitUsage)
	}
	in := c.Args().First()
	if err := checkOutput("export gguf", "-o", c.String("output"), in); err != nil {
		return err
	}
	m, err := vflowfmt.OpenModel(in)
	if err != nil {
		return cli.Exit(err.Error(), exitUsage)
	}
	defer m.Close()
	if err := gguf.Supported(m); err != nil {
		return cli.Exit(err.Error(), exitUsage)
	}
	for _, n := range gguf.Notes(m) {
		fmt.Fprintln(os.Stderr, "note:", n)
	}
	opt := gguf.Options{F32: c.Bool("f32"), Name: c.String("name"), Progress: progressBar("exporting", true)}
	if !opt.F32 {
		for _, note := range paddedNotes(gguf.Padded(m)) {
			fmt.Fprintf(os.Stderr, "note: %s: row length is not a multiple of 32; written as F32 (dequantized)\n", note)
		}
	}
	out := c.String("output")
	if err := fileio.GuardFault(in, func() error { return gguf.Write(m, out, opt) }); err != nil {
		return lateExit("export gguf", err)
	}
	dropOutputCache(out)
	st, err := os.Stat(out)
	if err != nil {
		return cli.Exit(err.Error(), exitError)
	}
	fmt.Printf("wrote %s (%.1f MiB)\n", out, float64(st.Size())/(1<<20))
	return nil
}

// paddedNotes folds per-layer tensor names (blk.3.ffn_down.weight) into one
// line per role ("ffn_down.weight in 12 layers"), so a note is said once,
// not once per layer.
func paddedNotes(names []string) []string {
	var order []string
	count := map[string]int{}
	for _, n := range names {
		role := n
		if rest, ok := strings.CutPrefix(n, "blk."); ok {
			if i := strings.IndexByte(rest, '.'); i >= 0 {
				role = rest[i+1:]
			}
		}
		if count[role] == 0 {
			order = append(order, role)
		}
		count[role]++
	}
	out := make([]string, len(order))
	for i, r := range order {
		out[i] = r
		if count[r] > 1 {
			out[i] = fmt.Sprintf("%s in %d layers", r, count[r])
		}
	}
	return out
}

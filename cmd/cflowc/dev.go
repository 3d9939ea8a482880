package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/cflow-dev/cflow/convert"
)

// dev groups developer tools that are not part of the user workflow; synth
// makes the seeded checkpoints docs/PERFORMANCE.md's benchmarks run on: the
// TinyLlama geometry (conversion, decode against llama.cpp) and the Gemma 4
// 26B-A4B per-layer geometry (8 of 128 experts read per token).
func init() {
	commands = append(commands, &cli.Command{
		Name:  "dev",
		Usage: "developer tools (synthetic checkpoints, page-cache recache)",
		Subcommands: []*cli.Command{{
			Name:  "synth",
			Usage: "write a seeded random Llama or Gemma 4 (gemma4_*) checkpoint (config.json + safetensors)",
			Flags: []cli.Flag{
				&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Required: true, Usage: "output directory"},
				&cli.StringFlag{Name: "geometry", Value: "tinyllama", Usage: strings.Join(synthGeometryNames(), ", ")},
				&cli.StringFlag{Name: "dtype", Value: "f16", Usage: "f16, bf16 or f32"},
				&cli.Uint64Flag{Name: "seed", Value: 1},
				&cli.IntFlag{Name: "shards", Value: 1, Usage: "number of safetensors shards, at most the geometry's tensor count (tensors split evenly by count, each shard holds at least one; more is refused, exit 2); > 1 writes an index"},
			},
			Action: func(c *cli.Context) error {
				if err := checkOutputDir("dev synth", c.String("output")); err != nil {
					return err
				}
				if n := c.Int("shards"); n < 1 || n > maxShards {
					return cli.Exit(fmt.Sprintf("dev synth: --shards %d outside 1..%d", n, maxShards), exitUsage)
				}
				name := c.String("geometry")
				o := convert.SynthOptions{Progress: progressBar("synthesizing", true),
					DType: c.String("dtype"), Seed: c.Uint64("seed"), Shards: c.Int("shards")}
				start := time.Now()
				var err error
				if g, ok := convert.GeometryByName(name); ok {
					o.Geometry = g
					err = convert.Synthesize(c.String("output"), o)
				} else if g4, ok := convert.Gemma4GeometryByName(name); ok {
					err = convert.SynthesizeGemma4(c.String("output"), g4, o)
				} else {
					return cli.Exit(fmt.Sprintf("dev synth: unknown geometry %q (want %s)", name, strings.Join(synthGeometryNames(), ", ")), exitUsage)
				}
				if errors.Is(err, convert.ErrTooManyShards) {
					return cli.Exit("dev synth: --shards: "+err.Error(), exitUsage)
				}
				if err != nil {
					return cli.Exit("dev synth: "+err.Error(), exitUsage)
				}
				fmt.Fprintf(os.Stderr, "wrote %s in %.1f s\n", c.String("output"), time.Since(start).Seconds())
				return nil
			},
		}, synthMoECommand(), recacheCommand()},
	})
}

// maxShards bounds dev synth --shards: published checkpoints have at most
// a few hundred shards, and the shard names hold five digits.
const maxShards = 1024

// checkOutputDir is the directory-output form of checkOutput (dev synth
// writes a checkpoint directory): its parent must exist, as every other
// output's directory must, and the path must not be a file. The directory
// itself may exist (its checkpoint files are replaced whole).
func checkOutputDir(cmd, dir string) error {
	bad := func(format string, a ...any) error {
		return cli.Exit(fmt.Sprintf("%s: -o: "+format, append([]any{cmd}, a...)...), exitUsage)
	}
	if st, err := os.Stat(filepath.Dir(dir)); err != nil {
		return bad("output %s: %v", dir, err)
	} else if !st.IsDir() {
		return bad("output %s: %s is not a directory", dir, filepath.Dir(dir))
	}
	if st, err := os.Stat(dir); err == nil && !st.IsDir() {
		return bad("output %s exists and is not a directory", dir)
	}
	return nil
}

// synthGeometryNames are the Llama and the gemma4_text geometries `dev
// synth` accepts.
func synthGeometryNames() []string {
	return append(convert.GeometryNames(), convert.Gemma4GeometryNames()...)
}

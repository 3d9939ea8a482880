package main

import (
	"fmt"
	"os"
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
		Usage: "developer tools (synthetic checkpoints)",
		Subcommands: []*cli.Command{{
			Name:  "synth",
			Usage: "write a seeded random Llama or Gemma 4 (gemma4_*) checkpoint (config.json + safetensors)",
			Flags: []cli.Flag{
				&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Required: true, Usage: "output directory"},
				&cli.StringFlag{Name: "geometry", Value: "tinyllama", Usage: strings.Join(synthGeometryNames(), ", ")},
				&cli.StringFlag{Name: "dtype", Value: "f16", Usage: "f16, bf16 or f32"},
				&cli.Uint64Flag{Name: "seed", Value: 1},
				&cli.IntFlag{Name: "shards", Value: 1, Usage: "number of safetensors shards (> 1 writes an index)"},
			},
			Action: func(c *cli.Context) error {
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
				if err != nil {
					return cli.Exit("dev synth: "+err.Error(), exitUsage)
				}
				fmt.Fprintf(os.Stderr, "wrote %s in %.1f s\n", c.String("output"), time.Since(start).Seconds())
				return nil
			},
		}, synthMoECommand()},
	})
}

// synthGeometryNames are the Llama and the gemma4_text geometries `dev
// synth` accepts.
func synthGeometryNames() []string {
	return append(convert.GeometryNames(), convert.Gemma4GeometryNames()...)
}

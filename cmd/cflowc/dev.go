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
// makes the seeded TinyLlama-geometry checkpoint the conversion benchmark
// in docs/PERFORMANCE.md runs on.
func init() {
	commands = append(commands, &cli.Command{
		Name:  "dev",
		Usage: "developer tools (synthetic checkpoints)",
		Subcommands: []*cli.Command{{
			Name:  "synth",
			Usage: "write a seeded random Llama checkpoint (config.json + safetensors)",
			Flags: []cli.Flag{
				&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Required: true, Usage: "output directory"},
				&cli.StringFlag{Name: "geometry", Value: "tinyllama", Usage: strings.Join(convert.GeometryNames(), ", ")},
				&cli.StringFlag{Name: "dtype", Value: "f16", Usage: "f16, bf16 or f32"},
				&cli.Uint64Flag{Name: "seed", Value: 1},
				&cli.IntFlag{Name: "shards", Value: 1, Usage: "number of safetensors shards (> 1 writes an index)"},
			},
			Action: func(c *cli.Context) error {
				g, ok := convert.GeometryByName(c.String("geometry"))
				if !ok {
					return cli.Exit(fmt.Sprintf("dev synth: unknown geometry %q (want %s)", c.String("geometry"), strings.Join(convert.GeometryNames(), ", ")), exitUsage)
				}
				start := time.Now()
				err := convert.Synthesize(c.String("output"), convert.SynthOptions{Progress: progressBar("synthesizing", true),
					Geometry: g, DType: c.String("dtype"), Seed: c.Uint64("seed"), Shards: c.Int("shards")})
				if err != nil {
					return cli.Exit("dev synth: "+err.Error(), exitUsage)
				}
				fmt.Fprintf(os.Stderr, "wrote %s in %.1f s\n", c.String("output"), time.Since(start).Seconds())
				return nil
			},
		}, synthMoECommand()},
	})
}

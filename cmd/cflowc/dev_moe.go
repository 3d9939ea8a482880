package main

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/cflow-dev/cflow/convert"
)

// synthMoECommand is `cflowc dev synth-moe`: the seeded arch2_4 MoE
// checkpoint docs/PERFORMANCE.md's expert I/O measurement runs on.
func synthMoECommand() *cli.Command {
	return &cli.Command{
		Name:  "synth-moe",
		Usage: "write a seeded random arch2_4_combined (DelayedSum MoE) checkpoint (config.json + safetensors, f16)",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Required: true, Usage: "output directory"},
			&cli.StringFlag{Name: "geometry", Value: "tiny", Usage: strings.Join(convert.MoEGeometryNames(), ", ")},
			&cli.Uint64Flag{Name: "seed", Value: 1},
		},
		Action: func(c *cli.Context) error {
			if err := checkOutputDir("dev synth-moe", c.String("output")); err != nil {
				return err
			}
			g, ok := convert.MoEGeometryByName(c.String("geometry"))
			if !ok {
				return cli.Exit(fmt.Sprintf("dev synth-moe: unknown geometry %q (want %s)", c.String("geometry"), strings.Join(convert.MoEGeometryNames(), ", ")), exitUsage)
			}
			start := time.Now()
			if err := convert.SynthesizeMoE(c.String("output"), g, convert.SynthOptions{Seed: c.Uint64("seed"), Progress: progressBar("synthesizing", true)}); err != nil {
				return cli.Exit("dev synth-moe: "+err.Error(), exitUsage)
			}
			fmt.Fprintf(os.Stderr, "wrote %s in %.1f s\n", c.String("output"), time.Since(start).Seconds())
			return nil
		},
	}
}

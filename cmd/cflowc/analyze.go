package main

import (
	"encoding/json"
	"fmt"
	"os"
	"text/tabwriter"

	"github.com/cflow-dev/cflow/analyze"
	"github.com/urfave/cli/v2"
)

func init() {
	commands = append(commands, &cli.Command{
		Name:      "analyze",
		Usage:     "critical-path weight bandwidth per token, naive vs delayed (report §4.5)",
		ArgsUsage: "(FILE | --preset NAME)",
		Description: "Costs each executed layer as max(attention, dense/(dense_delay+1), top-k experts/(expert_delay+1))\n" +
			"and sums along the execution plan. Presets use the report's Q4 arithmetic (0.5 B/param);\n" +
			"files use their real tile bytes (scales, norms and router included).",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "preset", Usage: "a named geometry instead of a file (see --list)"},
			&cli.BoolFlag{Name: "list", Usage: "list presets"},
			&cli.BoolFlag{Name: "json", Usage: "print one JSON object"},
		},
		Action: runAnalyze,
	})
}

func runAnalyze(c *cli.Context) error {
	if c.Bool("list") {
		for _, p := range analyze.Presets() {
			fmt.Printf("%-26s %s\n", p[0], p[1])
		}
		return nil
	}
	var r *analyze.Report
	var err error
	switch {
	case c.String("preset") != "" && c.NArg() == 0:
		r, err = analyze.Preset(c.String("preset"))
	case c.String("preset") == "" && c.NArg() == 1:
		r, err = analyzeFile(c.Args().First())
	default:
		return cli.Exit("analyze: give one FILE or --preset NAME", exitUsage)
	}
	if err != nil {
		return cli.Exit(err.Error(), exitUsage)
	}
	if c.Bool("json") {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	printAnalysis(r)
	return nil
}

func printAnalysis(r *analyze.Report) {
	fmt.Printf("%s (%s), dense_delay %d, expert_delay %d\n\n", r.Name, r.Quant, r.DenseDelay, r.ExpertDelay)
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "pass\tlayer\tkind\tattn MiB\tdense MiB\ttop-k MiB\tnaive MiB\tdelayed MiB\tbinding\t")
	for _, p := range r.Passes {
		fmt.Fprintf(tw, "%d\t%d\t%s\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t%s\t\n", p.Pass, p.Layer, p.Kind,
			p.Attn/analyze.MiB, p.Dense/analyze.MiB, p.Expert/analyze.MiB, p.Naive/analyze.MiB, p.Critical/analyze.MiB, p.Binding)
	}
	tw.Flush()
	fmt.Printf("\nB_naive %.2f MiB/token → B_critical %.2f MiB/token: %.2f× reduction\n", r.BNaive/analyze.MiB, r.BCritical/analyze.MiB, r.Reduction)
	for _, n := range r.Notes {
		fmt.Println("note:", n)
	}
}

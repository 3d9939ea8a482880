package main

import (
	"errors"
	"fmt"
	"os"
	"runtime"

	"github.com/cflow-dev/cflow/engine"
	"github.com/cflow-dev/cflow/trace"
	"github.com/cflow-dev/cflow/verify"
	"github.com/urfave/cli/v2"
)

func init() {
	commands = append(commands, &cli.Command{
		Name:      "verify",
		Usage:     "replay a reference trace teacher-forced and judge parity (docs/TRACE.md)",
		ArgsUsage: "FILE --trace TRACE.json",
		Description: "The rule follows the trace's weights and the file's quant type: f32 vs F32, *_replay vs the\n" +
			"same quantization, f32 vs Q8_0 / Q4_0. Prints a per-step table and a verdict; exits 1 on\n" +
			"failure and 2 for a trace of another model.",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "trace", Usage: "reference trace JSON"},
			&cli.BoolFlag{Name: "json", Usage: "print the report as JSON"},
			&cli.IntFlag{Name: "threads", Aliases: []string{"t"}, Value: runtime.NumCPU(), Usage: "decode threads"},
		}, cacheTypeFlags(engine.KVF32)...),
		Action: runVerify,
	})
}

func runVerify(c *cli.Context) error {
	if c.NArg() != 1 {
		return cli.Exit("verify: give one model FILE", exitUsage)
	}
	if c.String("trace") == "" {
		return cli.Exit("verify: --trace is required", exitUsage)
	}
	if err := checkThreads("verify", c.Int("threads")); err != nil {
		return err
	}
	tr, err := trace.Load(c.String("trace"))
	if err != nil {
		return cli.Exit("verify: "+err.Error(), exitUsage)
	}
	m, err := openRunModel(c.Args().First())
	if err != nil {
		return cli.Exit("verify: "+err.Error(), exitUsage)
	}
	defer m.Close()
	rule, err := verify.SelectRule(tr.Weights, m.Header.QuantType)
	if err != nil {
		return cli.Exit("verify: "+err.Error(), exitUsage)
	}
	eo := engine.Options{Threads: max(1, c.Int("threads")), Kernel: verify.Kernel()}
	if err := cacheTypes(c, "verify", &eo); err != nil {
		return err
	}
	e, err := engine.New(m, eo)
	if err != nil {
		return cli.Exit("verify: "+err.Error(), exitUsage)
	}
	defer e.Close()
	if err := verify.CheckModel(e.Header(), e.Passes(), tr); err != nil {
		return cli.Exit("verify: "+err.Error(), exitUsage)
	}
	rep, err := verify.ReplayCache(e, m, eo.Threads, tr, rule, progressBar("replaying", false))
	if errors.Is(err, verify.ErrMismatch) {
		return cli.Exit("verify: "+err.Error(), exitUsage)
	}
	if err != nil {
		return lateExit("verify", err)
	}
	if c.Bool("json") {
		err = rep.WriteJSON(os.Stdout)
	} else {
		fmt.Printf("kernel %s\n", e.Kernel())
		err = rep.WriteTable(os.Stdout)
	}
	if err != nil {
		return cli.Exit(err.Error(), exitError)
	}
	if !rep.Pass {
		return cli.Exit("verify: parity failed", exitFail)
	}
	return nil
}

package main

import (
	"encoding/json"
	"fmt"
	"os"
	goruntime "runtime"
	"strings"

	"github.com/cflow-dev/cflow/bench"
	"github.com/cflow-dev/cflow/cflowfmt"
	cfrt "github.com/cflow-dev/cflow/runtime"
	"github.com/cflow-dev/cflow/vflowfmt"
	"github.com/urfave/cli/v2"
	"golang.org/x/sys/unix"
)

func init() {
	commands = append(commands, &cli.Command{
		Name:      "bench",
		Usage:     "decode tok/s, weight bytes per token, effective GB/s and the read-bandwidth roofline",
		ArgsUsage: "FILE",
		Description: "After --warmup untimed tokens, decodes --tokens tokens --runs times from an empty KV cache\n" +
			"(BOS, then seeded random tokens, as llama-bench's tg test) and reports the median tok/s.\n" +
			"Then reads a --probe-mib buffer with the same thread count (median of --probe-runs passes):\n" +
			"roofline tok/s = probe GB/s ÷ bytes per token; roofline fraction = effective GB/s ÷ probe GB/s.",
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "threads", Aliases: []string{"t"}, Value: goruntime.NumCPU(), Usage: "decode and probe threads (default: every CPU, as run, verify and ppl)"},
			&cli.IntFlag{Name: "tokens", Aliases: []string{"n"}, Value: 64, Usage: "decode tokens per run"},
			&cli.IntFlag{Name: "runs", Aliases: []string{"r"}, Value: 5, Usage: "timed runs (median reported)"},
			&cli.IntFlag{Name: "warmup", Value: 16, Usage: "untimed warm-up tokens"},
			&cli.IntFlag{Name: "probe-mib", Value: bench.ProbeBytes >> 20, Usage: "probe buffer size in MiB (larger than the LLC)"},
			&cli.IntFlag{Name: "probe-runs", Value: 5, Usage: "probe passes (median reported)"},
			&cli.BoolFlag{Name: "json", Usage: "print one JSON object"},
			&cli.StringFlag{Name: "cpuprofile", Usage: "write a CPU profile of the decode runs (go tool pprof)"},
			&cli.StringFlag{Name: "expert-io", Value: "mmap", Usage: "expert fetch: mmap, sync or direct (as run's --expert-io)"},
		},
		Action: runBench,
	})
}

func runBench(c *cli.Context) error {
	if c.NArg() != 1 {
		return cli.Exit("bench: give one FILE", exitUsage)
	}
	in := c.Args().First()
	if err := checkThreads("bench", c.Int("threads")); err != nil {
		return err
	}
	for _, f := range []string{"tokens", "runs", "probe-runs"} {
		if c.Int(f) < 1 {
			return cli.Exit(fmt.Sprintf("bench: --%s %d must be ≥ 1", f, c.Int(f)), exitUsage)
		}
	}
	if c.Int("warmup") < 0 {
		return cli.Exit(fmt.Sprintf("bench: --warmup %d must be ≥ 0", c.Int("warmup")), exitUsage)
	}
	if mib, most := c.Int("probe-mib"), maxProbeMiB(); mib < 1 || mib > most {
		return cli.Exit(fmt.Sprintf("bench: --probe-mib %d outside 1..%d (half of this machine's memory)", mib, most), exitUsage)
	}
	if p := c.String("cpuprofile"); p != "" {
		if err := checkOutput("bench", "--cpuprofile", p, in); err != nil {
			return err
		}
	}
	m, err := vflowfmt.OpenModel(in)
	if err != nil {
		return cli.Exit("bench: "+err.Error(), exitUsage)
	}
	defer m.Close()
	if need := max(c.Int("tokens"), c.Int("warmup")); need > int(m.Header.MaxSeqLen) {
		return cli.Exit(fmt.Sprintf("bench: --tokens/--warmup %d exceed the model's context of %d", need, m.Header.MaxSeqLen), exitUsage)
	}
	if t := c.Int("threads"); t > goruntime.GOMAXPROCS(0) {
		fmt.Fprintf(os.Stderr, "note: %d threads on GOMAXPROCS %d; raising GOMAXPROCS\n", t, goruntime.GOMAXPROCS(0))
		goruntime.GOMAXPROCS(t)
	}
	xio, err := cfrt.ParseExpertIO(c.String("expert-io"))
	if err != nil {
		return cli.Exit("bench: --expert-io: "+err.Error(), exitUsage)
	}
	cfg := bench.Config{ExpertIO: xio,
		Threads: c.Int("threads"), Tokens: c.Int("tokens"), Runs: c.Int("runs"), Warmup: c.Int("warmup"),
		ProbeBytes: int64(c.Int("probe-mib")) << 20, ProbeRuns: c.Int("probe-runs"), Seed: 1,
	}
	if p := c.String("cpuprofile"); p != "" {
		pf, err := cflowfmt.CreateSink(p)
		if err != nil {
			return cli.Exit("bench: --cpuprofile: "+err.Error(), exitUsage)
		}
		defer pf.Abort() // after Commit, a no-op
		cfg.Profile = pf
	}
	r, err := bench.Run(m, cfg)
	if err != nil {
		return lateExit("bench", err)
	}
	if pf, ok := cfg.Profile.(*cflowfmt.Sink); ok {
		if err := pf.Commit(); err != nil {
			return cli.Exit("bench: --cpuprofile: "+err.Error(), exitError)
		}
	}
	if c.Bool("json") {
		return json.NewEncoder(os.Stdout).Encode(r)
	}
	fmt.Printf("%s (%s, kernel %s), %d threads, %d tokens × %d runs\n", r.Model, r.Quant, r.Kernel, r.Threads, r.Tokens, len(r.Runs))
	fmt.Printf("decode        %8.2f tok/s (median; runs %s)\n", r.DecodeTokS, benchList(r.Runs))
	fmt.Printf("weights read  %8.1f MB/token\n", r.BytesPerToken/1e6)
	fmt.Printf("effective     %8.2f GB/s\n", r.GBs)
	fmt.Printf("read probe    %8.2f GB/s (median; passes %s)\n", r.RooflineGBs, benchList(r.ProbeRuns))
	fmt.Printf("roofline      %8.2f tok/s; reached %.1f%%\n", r.RooflineTokS, 100*r.RooflineFrac)
	return nil
}

func benchList(xs []float64) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprintf("%.2f", x)
	}
	return strings.Join(s, " ")
}

// maxProbeMiB bounds --probe-mib by half the machine's RAM: the probe
// allocates and touches the whole buffer, so a larger one can only swap
// or be killed.
func maxProbeMiB() int {
	var si unix.Sysinfo_t
	if unix.Sysinfo(&si) != nil || si.Totalram == 0 {
		return 1 << 16
	}
	return max(1, int(uint64(si.Totalram)*uint64(si.Unit)/2>>20))
}

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"strings"

	"github.com/cflow-dev/cflow/bench"
	"github.com/cflow-dev/cflow/engine"
	"github.com/cflow-dev/cflow/engine/expertio"
	"github.com/cflow-dev/cflow/internal/fileio"
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
			"A read probe over a --probe-mib buffer, with the same thread count, takes a pass before each\n" +
			"decode run and after the last (a shared machine's traffic then weighs on both alike), then more\n" +
			"up to --probe-runs passes (with --cpuprofile, all after the runs); its median is the roofline:\n" +
			"roofline tok/s = probe GB/s ÷ bytes per token; roofline fraction = effective GB/s ÷ probe GB/s.\n" +
			"--prompt N first times prompt processing as llama-bench's ppN test: N tokens (BOS, then seeded\n" +
			"random tokens) from an empty cache through the prompt path, --runs times, median prompt tok/s.\n" +
			"--depth N (llama-bench's -d) runs the prompt and decode tests after N tokens are already in the\n" +
			"KV cache (prefilled once, untimed; each run cut back to them): decode at depth.\n" +
			"--tokens 0 skips decode. --parallel N decodes N sequences together, one token of each per step\n" +
			"and one pass over the weights for all (serve's tick with N clients decoding, without HTTP):\n" +
			"tok/s then counts every sequence's tokens, and the roofline divides a step's weight reads\n" +
			"among them (exact for dense models). The JSON names the CPU (\"cpu\": /proc/cpuinfo's model name).",
		Flags: append([]cli.Flag{
			&cli.IntFlag{Name: "threads", Aliases: []string{"t"}, Value: runtime.NumCPU(), Usage: "decode and probe threads (as run, verify and ppl)", DefaultText: "every CPU"},
			&cli.IntFlag{Name: "tokens", Aliases: []string{"n"}, Value: 64, Usage: "decode tokens per run (0: no decode test)"},
			&cli.IntFlag{Name: "depth", Aliases: []string{"d"}, Usage: "tokens already in the KV cache before each prompt and decode test (llama-bench's -d; 0: empty)"},
			&cli.IntFlag{Name: "prompt", Aliases: []string{"p"}, Usage: "prompt tokens of the prompt-processing test (llama-bench's ppN; 0: none)"},
			&cli.IntFlag{Name: "batch", Usage: fmt.Sprintf("prompt tokens per pass over the weights (1..%d; 1 = token by token, the A/B baseline)", engine.MaxBatch), Value: engine.MaxBatch},
			&cli.IntFlag{Name: "parallel", Aliases: []string{"np"}, Value: 1, Usage: "sequences decoding together, 1..--batch (serve's --parallel; tok/s is their sum)"},
			&cli.IntFlag{Name: "runs", Aliases: []string{"r"}, Value: 5, Usage: "timed runs, 1..1000 (median reported)"},
			&cli.IntFlag{Name: "warmup", Value: 16, Usage: "untimed warm-up tokens"},
			&cli.IntFlag{Name: "probe-mib", Value: bench.ProbeBytes >> 20, Usage: "probe buffer size in MiB (larger than the LLC)"},
			&cli.IntFlag{Name: "probe-runs", Value: 5, Usage: "least probe passes, 1..1000 (median reported; with a decode test, one before each run and one after the last, then more up to this)"},
			&cli.BoolFlag{Name: "json", Usage: "print one JSON object"},
			&cli.StringFlag{Name: "cpuprofile", Usage: "write a CPU profile of the decode runs (go tool pprof)"},
			&cli.StringFlag{Name: "expert-io", Value: "mmap", Usage: "expert fetch: mmap, sync or direct (as run's --expert-io)"},
		}, cacheTypeFlags(engine.KVF16)...),
		Action: runBench,
	})
}

// maxBenchRuns bounds --runs and --probe-runs.
const maxBenchRuns = 1000

func runBench(c *cli.Context) error {
	if c.NArg() != 1 {
		return cli.Exit("bench: give one FILE", exitUsage)
	}
	in := c.Args().First()
	if err := checkBenchFlags(c, in); err != nil {
		return err
	}
	defer onOneCPU(c.Int("threads"))()
	m, err := vflowfmt.OpenModel(in)
	if err != nil {
		return cli.Exit("bench: "+err.Error(), exitUsage)
	}
	defer m.Close()
	cfg, err := benchConfig(c, int(m.Header.MaxSeqLen))
	if err != nil {
		return err
	}
	if p := c.String("cpuprofile"); p != "" {
		pf, err := fileio.CreateSink(p)
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
	if pf, ok := cfg.Profile.(*fileio.Sink); ok {
		if err := pf.Commit(); err != nil {
			return lateExit("bench: --cpuprofile", err)
		}
	}
	defer warnSmallPages(in, r)
	if c.Bool("json") {
		return json.NewEncoder(os.Stdout).Encode(r)
	}
	printBench(r, c.Int("runs"))
	return nil
}

// checkBenchFlags refuses, before the model is opened, the flag values
// that cannot describe a benchmark.
func checkBenchFlags(c *cli.Context, in string) error {
	if err := checkThreads("bench", c.Int("threads")); err != nil {
		return err
	}
	for _, f := range []string{"tokens", "prompt", "depth"} {
		if c.Int(f) < 0 {
			return cli.Exit(fmt.Sprintf("bench: --%s %d: must be ≥ 0", f, c.Int(f)), exitUsage)
		}
	}
	if c.Int("tokens")+c.Int("prompt") == 0 {
		return cli.Exit("bench: --tokens and --prompt are both 0: nothing to time", exitUsage)
	}
	// Runs are repeated whole: a count past maxBenchRuns only makes a
	// mistyped number run for hours.
	for _, f := range []string{"runs", "probe-runs"} {
		if n := c.Int(f); n < 1 || n > maxBenchRuns {
			return cli.Exit(fmt.Sprintf("bench: --%s %d outside 1..%d", f, n, maxBenchRuns), exitUsage)
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
	return nil
}

// benchConfig reads the flags that depend on the model (its context) into
// bench's configuration.
func benchConfig(c *cli.Context, maxSeq int) (bench.Config, error) {
	// Each run starts from an empty KV cache, so each count alone must fit
	// the context (bench.Run's own check would be exit 3).
	for _, f := range []string{"tokens", "warmup", "prompt"} {
		if n, d := c.Int(f), c.Int("depth"); d+n > maxSeq {
			at := ""
			if d > 0 {
				at = fmt.Sprintf(" at --depth %d", d)
			}
			return bench.Config{}, cli.Exit(fmt.Sprintf("bench: --%s %d%s exceeds the model's context of %d", f, n, at, maxSeq), exitUsage)
		}
	}
	if c.Int("depth") > 0 && c.Int("parallel") > 1 {
		return bench.Config{}, cli.Exit("bench: --depth with --parallel > 1 is not implemented", exitUsage)
	}
	if t := c.Int("threads"); t > runtime.GOMAXPROCS(0) {
		fmt.Fprintf(os.Stderr, "note: %d threads on GOMAXPROCS %d; raising GOMAXPROCS\n", t, runtime.GOMAXPROCS(0))
		runtime.GOMAXPROCS(t)
	}
	if b := c.Int("batch"); b < 1 || b > engine.MaxBatch {
		return bench.Config{}, cli.Exit(fmt.Sprintf("bench: --batch %d outside 1..%d", b, engine.MaxBatch), exitUsage)
	}
	if n := c.Int("parallel"); n < 1 || n > c.Int("batch") {
		return bench.Config{}, cli.Exit(fmt.Sprintf("bench: --parallel %d outside 1..%d (--batch: one pass feeds every sequence)", n, c.Int("batch")), exitUsage)
	}
	xio, err := expertio.Parse(c.String("expert-io"))
	if err != nil {
		return bench.Config{}, cli.Exit("bench: --expert-io: "+err.Error(), exitUsage)
	}
	var kv engine.Options
	if err := cacheTypes(c, "bench", &kv); err != nil {
		return bench.Config{}, err
	}
	return bench.Config{ExpertIO: xio, Batch: c.Int("batch"), Parallel: c.Int("parallel"),
		Threads: c.Int("threads"), Tokens: c.Int("tokens"), Prompt: c.Int("prompt"), Depth: c.Int("depth"), Runs: c.Int("runs"), Warmup: c.Int("warmup"),
		ProbeBytes: int64(c.Int("probe-mib")) << 20, ProbeRuns: c.Int("probe-runs"), Seed: 1,
		CacheK: kv.CacheK, CacheV: kv.CacheV,
	}, nil
}

// printBench prints a result as text, one figure a line.
func printBench(r *bench.Result, runs int) {
	fmt.Printf("%s (%s, kernel %s), %d threads, %d runs, CPU %s\n", r.Model, r.Quant, r.Kernel, r.Threads, runs, r.CPU)
	fmt.Printf("KV cache      keys %s, values %s: %d bytes per position\n", r.KVCacheType.K, r.KVCacheType.V, r.KVBytesPerPosition)
	if r.Depth > 0 {
		fmt.Printf("depth         %d tokens in the KV cache before each test (llama-bench -d)\n", r.Depth)
	}
	if r.PromptTokens > 0 {
		fmt.Printf("prompt (pp%d) %8.2f tok/s (median; runs %s; %d tokens per weight pass)\n", r.PromptTokens, r.PromptTokS, benchList(r.PromptRuns), r.Batch)
	}
	if r.Tokens > 0 {
		printBenchDecode(r)
	}
	fmt.Printf("read probe    %8.2f GB/s (median; passes %s)\n", r.RooflineGBs, benchList(r.ProbeRuns))
	if r.Tokens > 0 {
		fmt.Printf("roofline      %8.2f tok/s; reached %.1f%%\n", r.RooflineTokS, 100*r.RooflineFrac)
	}
	if r.HugePageFraction != nil {
		fmt.Printf("2 MiB pages   %s of the model mapping\n", fileio.HugePages{Huge: r.HugePageBytes, Size: r.MappedBytes})
	}
	if r.NUMA != "" {
		fmt.Println(r.NUMA)
	}
}

func printBenchDecode(r *bench.Result) {
	if r.Parallel > 1 {
		fmt.Printf("decode (tg%d × %d sequences) %8.2f tok/s in all, %.2f each (median; runs %s)\n",
			r.Tokens, r.Parallel, r.DecodeTokS, r.DecodeTokS/float64(r.Parallel), benchList(r.Runs))
	} else {
		fmt.Printf("decode (tg%d) %8.2f tok/s (median; runs %s)\n", r.Tokens, r.DecodeTokS, benchList(r.Runs))
	}
	sb := r.StreamBytes
	fmt.Printf("weights read  %8.1f MB/token (attention %.1f, dense %.1f, router %.1f, experts %.1f, embedding %.3f, LM head %.1f)\n",
		r.BytesPerToken/1e6, sb.Attn/1e6, sb.Dense/1e6, sb.Router/1e6, sb.Experts/1e6, sb.Embed/1e6, sb.LMHead/1e6)
	if r.Parallel > 1 {
		fmt.Printf("              (per token as if alone; a step reads a dense model's weights once for all %d)\n", r.Parallel)
	}
	fmt.Printf("effective     %8.2f GB/s\n", r.GBs)
}

// warnSmallPages tells, on stderr, when less than 90% of a model mapping
// of at least 16 MiB was on 2 MiB pages (smaller ones lose too much to
// their unaligned ends to judge), and the fix: the decode figure then
// includes TLB misses of the page cache's small folios, not the engine's
// speed.
func warnSmallPages(in string, r *bench.Result) {
	if r.HugePageFraction == nil || *r.HugePageFraction >= 0.9 || r.MappedBytes < 16<<20 {
		return
	}
	h := fileio.HugePages{Huge: r.HugePageBytes, Size: r.MappedBytes}
	if m := fileio.THPEnabled(); m == "never" || m == "" {
		fmt.Fprintf(os.Stderr, "warning: only %s of the model mapping are on 2 MiB pages: transparent huge pages are off (%q), so decode pays a TLB miss per 4 KiB\n", h, m)
		return
	}
	fmt.Fprintf(os.Stderr, "warning: only %s of the model mapping are on 2 MiB pages (the page cache holds the rest in small folios), so decode pays a TLB miss per 4 KiB; 'cflowc dev recache %s' re-reads it in 2 MiB folios\n", h, in)
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

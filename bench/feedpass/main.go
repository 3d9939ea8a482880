// Command feedpass measures what one engine.Engine.StepFeeds pass costs
// for the shapes a serving tick takes — B decode tokens of B sequences, a
// 32-token prompt, decode tokens and a prompt together — relative to one
// sequence's decode token: how much continuous batching can buy on this
// CPU before any scheduler is involved. -cpu reports the process's CPU
// time per pass instead of wall time (with -threads 1 no pool waits are
// counted, so the figure holds up on a machine others are using).
//
//	go run ./bench/feedpass -model tinyllama-q4_0.cflow -threads 1 -cpu
package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"runtime"
	"runtime/pprof"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/cflow-dev/cflow/engine"
	"github.com/cflow-dev/cflow/vflowfmt"
)

func main() {
	path := flag.String("model", "", "a .cflow or .vflow model file")
	threads := flag.Int("threads", 1, "engine threads")
	passes := flag.Int("passes", 6, "passes per measurement")
	rounds := flag.Int("rounds", 3, "rounds over every shape (median reported)")
	useCPU := flag.Bool("cpu", false, "CPU time of the process instead of wall time")
	held := flag.Int("prefix", 4, "positions each decoding sequence holds before a round's passes (a serving tick's sequences hold their prompt and what they generated: 33–96 for serveload's defaults)")
	only := flag.String("only", "", "measure only the shapes whose names start with this (e.g. \"4 decode tokens\")")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the measured passes to this file (with each run's reset: a -prefix-token prefill of the shape's decoding sequences; -passes dilutes it)")
	flag.Parse()
	if *path == "" || *threads < 1 || *passes < 1 || *rounds < 1 || *held < 1 {
		log.Fatal("need -model; -threads, -passes, -rounds and -prefix ≥ 1")
	}
	runtime.GOMAXPROCS(*threads + 1)
	m, err := vflowfmt.OpenModel(*path)
	if err != nil {
		log.Fatal(err)
	}
	e, err := engine.New(m, engine.Options{Threads: *threads})
	if err != nil {
		log.Fatal(err)
	}
	defer e.Close()
	shapes := tickShapes(e, *held)
	clock := func() float64 {
		if !*useCPU {
			return float64(time.Now().UnixNano()) / 1e9
		}
		var ru syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
	}
	if *only != "" {
		kept := shapes[:0]
		for _, sh := range shapes {
			if strings.HasPrefix(sh.name, *only) {
				kept = append(kept, sh)
			}
		}
		if len(kept) == 0 {
			log.Fatalf("-only %q matches no shape", *only)
		}
		shapes = kept
	}
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			log.Fatal(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			log.Fatal(err)
		}
		defer pprof.StopCPUProfile()
	}
	ms, err := measure(e, shapes, *rounds, *passes, clock)
	if err != nil {
		log.Fatal(err)
	}
	what := "wall"
	if *useCPU {
		what = "CPU"
	}
	fmt.Printf("%d threads, %s ms per pass, median of %d rounds of %d passes\n", *threads, what, *rounds, *passes)
	one := median(ms[0])
	for k, sh := range shapes {
		fmt.Printf("%-22s %9.1f ms  %5.2f× one token's pass\n", sh.name, median(ms[k]), median(ms[k])/one)
	}
}

// prefix is what every decoding sequence holds before a round's passes
// (BOS and n−1 tokens, within a vocabulary of V), so a decode token
// attends to n earlier positions.
func prefix(V, n int) []int {
	p := []int{1}
	for i := 1; i < n; i++ {
		p = append(p, 100*i%V)
	}
	return p
}

// promptLen is the prompt shapes' prompt: a serving request's 32 tokens.
const promptLen = 32

// shape is one tick shape: feeds returns the next pass's feeds; reset puts
// the sequences it decodes back to prefix and runs before each run of its
// passes (each pass moves them on one position; a prompt always starts a
// fresh sequence). Only the shape's own sequences are reset, so a profile
// of one shape (-only, -cpuprofile) holds as little prefill as it can.
type shape struct {
	name  string
	feeds func() []engine.Feed
	reset func() error
}

// tickShapes returns the shapes a serving tick takes on e: B decode tokens
// of B sequences (each continuing its own history by one token per pass),
// a prompt alone, decode tokens and a prompt in one pass.
func tickShapes(e *engine.Engine, held int) []shape {
	V := int(e.Header().VocabSize)
	seqs := make([]*engine.Sequence, 9)
	for i := range seqs {
		seqs[i] = e.NewSequence()
	}
	prompt := make([]int, promptLen)
	for i := range prompt {
		prompt[i] = (10 + 7*i) % V
	}
	reset := func(b int) func() error {
		return func() error { return resetSeqs(e, seqs[:b], prefix(V, held)) }
	}
	decode := func(b int) []engine.Feed {
		var fs []engine.Feed
		for i := range b {
			fs = append(fs, engine.Feed{Seq: seqs[i], Toks: []int{(500 + i) % V}, Logits: true})
		}
		return fs
	}
	withPrompt := func(fs []engine.Feed) []engine.Feed {
		seqs[8].Reset()
		return append(fs, engine.Feed{Seq: seqs[8], Toks: prompt, Logits: true})
	}
	return []shape{
		{"1 decode token", func() []engine.Feed { return decode(1) }, reset(1)},
		{"2 decode tokens", func() []engine.Feed { return decode(2) }, reset(2)},
		{"4 decode tokens", func() []engine.Feed { return decode(4) }, reset(4)},
		{"8 decode tokens", func() []engine.Feed { return decode(8) }, reset(8)},
		{fmt.Sprintf("%d prompt tokens", promptLen), func() []engine.Feed { return withPrompt(nil) }, reset(0)},
		{fmt.Sprintf("4 decode + %d prompt", promptLen), func() []engine.Feed { return withPrompt(decode(4)) }, reset(4)},
	}
}

// resetSeqs empties qs and feeds each the tokens pre.
func resetSeqs(e *engine.Engine, qs []*engine.Sequence, pre []int) error {
	for _, q := range qs {
		q.Reset()
		if _, err := e.PrefillSequence(q, pre, nil); err != nil {
			return err
		}
	}
	return nil
}

// measure times passes passes of every shape per round (clock in seconds)
// and returns each shape's milliseconds per pass, one entry per round.
func measure(e *engine.Engine, shapes []shape, rounds, passes int, clock func() float64) ([][]float64, error) {
	ms := make([][]float64, len(shapes))
	for range rounds {
		for k, sh := range shapes {
			if err := sh.reset(); err != nil {
				return nil, err
			}
			t0 := clock()
			for range passes {
				if _, err := e.StepFeeds(sh.feeds()); err != nil {
					return nil, fmt.Errorf("%s: %w", sh.name, err)
				}
			}
			ms[k] = append(ms[k], (clock()-t0)*1000/float64(passes))
		}
	}
	return ms, nil
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s[len(s)/2]
}

// Command plot draws decode tok/s against thread count for cflowc and
// llama.cpp, with cflowc's read-bandwidth roofline, from the raw results
// bench/side-by-side.sh writes (OUT/results.jsonl). It takes the same
// medians over rounds as the script's table, so the plot and the table in
// docs/PERFORMANCE.md always come from one invocation. It writes SVG with
// the standard library (through cflowfmt's sink, like every cflow output),
// so regenerating it needs no extra modules:
//
//	go run ./bench/plot -in bench/out/results.jsonl -o docs/decode-threads.svg
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"sort"

	"github.com/cflow-dev/cflow/internal/fileio"
)

// row is one line of results.jsonl; llama.cpp rows carry only tok_s. Test
// is "tg" (decode) or "pp" (prompt); rows written before the prompt test
// existed have none and are decode rows.
type row struct {
	Engine       string  `json:"engine"`
	Test         string  `json:"test"`
	Round        int     `json:"round"`
	Threads      int     `json:"threads"`
	TokS         float64 `json:"tok_s"`
	RooflineTokS float64 `json:"roofline_tok_s"`
}

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// run is the command: 0 when the plot is written, 2 for bad usage or input
// (cflowc's convention), with the reason on stderr and no output file.
func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("plot", flag.ContinueOnError)
	fs.SetOutput(stderr)
	in := fs.String("in", "bench/out/results.jsonl", "side-by-side raw results")
	out := fs.String("o", "docs/decode-threads.svg", "SVG to write")
	title := fs.String("title", "Decode, TinyLlama-geometry Q4_0 (same weights)", "plot title")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if err := plot(*in, *out, *title, stdout); err != nil {
		fmt.Fprintln(stderr, "plot:", err)
		return 2
	}
	return 0
}

// plot checks the output path before reading anything (never over the
// input, never into a missing directory) and writes the SVG through the
// temp-and-rename sink every cflow output uses, so a failure leaves no
// partial file and an existing plot is replaced whole or not at all.
func plot(in, out, title string, stdout io.Writer) error {
	if err := fileio.CheckOutput(out, in); err != nil {
		return err
	}
	rows, err := read(in)
	if err != nil {
		return err
	}
	s := summarize(rows)
	if s.max() <= 0 {
		return fmt.Errorf("%s: no decode results with a positive tok/s", in)
	}
	if err := fileio.WriteFileAtomic(out, []byte(svg(s, title))); err != nil {
		return err
	}
	for _, t := range s.threads {
		fmt.Fprintf(stdout, "threads %d: llama.cpp %.2f, cflowc %.2f, roofline %.1f tok/s\n",
			t, s.series["llama.cpp"][t], s.series["cflowc"][t], s.series["roofline"][t])
	}
	return nil
}

func read(path string) ([]row, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var rows []row
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		if len(sc.Bytes()) == 0 {
			continue
		}
		var r row
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, fmt.Errorf("%s: line %d: %w", path, line, err)
		}
		if r.Test == "pp" {
			continue // the plot is decode tok/s against the bandwidth roofline
		}
		if r.Threads <= 0 || !finiteNonNeg(r.TokS) || !finiteNonNeg(r.RooflineTokS) {
			return nil, fmt.Errorf("%s: line %d: threads %d, tok_s %v, roofline_tok_s %v: want threads > 0 and finite rates ≥ 0", path, line, r.Threads, r.TokS, r.RooflineTokS)
		}
		rows = append(rows, r)
	}
	return rows, sc.Err()
}

// summary holds the median over rounds of each series at each thread count.
type summary struct {
	threads []int
	series  map[string]map[int]float64 // "llama.cpp", "cflowc", "roofline"
}

// max is the largest value of the drawn series (0 when there are none):
// it sets the y axis.
func (s summary) max() float64 {
	m := 0.0
	for _, st := range styles {
		for _, v := range s.series[st.key] {
			m = math.Max(m, v)
		}
	}
	return m
}

func summarize(rows []row) summary {
	vals := map[string]map[int][]float64{}
	add := func(k string, t int, v float64) {
		if vals[k] == nil {
			vals[k] = map[int][]float64{}
		}
		vals[k][t] = append(vals[k][t], v)
	}
	seen := map[int]bool{}
	for _, r := range rows {
		seen[r.Threads] = true
		add(r.Engine, r.Threads, r.TokS)
		if r.Engine == "cflowc" {
			add("roofline", r.Threads, r.RooflineTokS)
		}
	}
	s := summary{series: map[string]map[int]float64{}}
	for t := range seen {
		s.threads = append(s.threads, t)
	}
	sort.Ints(s.threads)
	for k, byT := range vals {
		s.series[k] = map[int]float64{}
		for t, v := range byT {
			s.series[k][t] = median(v)
		}
	}
	return s
}

func median(v []float64) float64 {
	v = append([]float64(nil), v...)
	sort.Float64s(v)
	n := len(v)
	if n%2 == 1 {
		return v[n/2]
	}
	return (v[n/2-1] + v[n/2]) / 2
}

func finiteNonNeg(v float64) bool { return v >= 0 && !math.IsInf(v, 1) }

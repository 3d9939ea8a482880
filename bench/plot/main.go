// Command plot draws decode tok/s against thread count for cflowc and
// llama.cpp, with cflowc's read-bandwidth roofline, from the raw results
// bench/side-by-side.sh writes (OUT/results.jsonl). It takes the same
// medians over rounds as the script's table, so the plot and the table in
// docs/PERFORMANCE.md always come from one invocation. It writes SVG with
// the standard library only, so regenerating it needs no extra modules:
//
//	go run ./bench/plot -in bench/out/results.jsonl -o docs/decode-threads.svg
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"sort"
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

func main() {
	in := flag.String("in", "bench/out/results.jsonl", "side-by-side raw results")
	out := flag.String("o", "docs/decode-threads.svg", "SVG to write")
	title := flag.String("title", "Decode, TinyLlama-geometry Q4_0 (same weights)", "plot title")
	flag.Parse()
	rows, err := read(*in)
	if err != nil {
		log.Fatal(err)
	}
	s := summarize(rows)
	if len(s.threads) == 0 {
		log.Fatalf("%s: no results", *in)
	}
	if err := os.WriteFile(*out, []byte(svg(s, *title)), 0o644); err != nil {
		log.Fatal(err)
	}
	for _, t := range s.threads {
		fmt.Printf("threads %d: llama.cpp %.2f, cflowc %.2f, roofline %.1f tok/s\n",
			t, s.series["llama.cpp"][t], s.series["cflowc"][t], s.series["roofline"][t])
	}
}

func read(path string) ([]row, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var rows []row
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if len(sc.Bytes()) == 0 {
			continue
		}
		var r row
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if r.Test == "pp" {
			continue // the plot is decode tok/s against the bandwidth roofline
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

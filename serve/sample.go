package serve

import (
	"runtime"
	"sync/atomic"

	"github.com/cflow-dev/cflow/generate"
)

// outcome is what a tick hands one feed's job: an error, a token, or
// nothing (a prompt chunk before the last).
type outcome struct {
	err     error
	deliver bool
	tok     generate.Token
}

// sample sets the outcome of every feed in s.sampled to its sequence's
// next token. Each sequence's Next reads only its own logits and state, so
// the sequences sample in parallel: a temperature draw over a 32k
// vocabulary costs ~1 ms of CPU (the softmax's exps), and one after
// another four sampled sequences held their next tick back by ~4 ms. The
// scheduler samples too and never waits for a helper that has not started
// a sequence (a greedy tick, ~45 µs of argmax per sequence, is not held up
// by helpers waiting for a CPU) — only for the sequences helpers run.
func (s *scheduler) sample(logits [][]float32) {
	n := len(s.sampled)
	var claimed atomic.Int32
	run := func() bool {
		i := int(claimed.Add(1)) - 1
		if i >= n {
			return false
		}
		k := s.sampled[i]
		s.outs[k] = outcome{deliver: true, tok: s.slots[s.feeds[k].slot].j.seq.Next(logits[k])}
		return true
	}
	var helped chan struct{} // one receive per sequence a helper sampled
	if helpers := min(n-1, runtime.GOMAXPROCS(0)-1); helpers > 0 {
		helped = make(chan struct{}, n)
		for range helpers {
			go func() {
				for run() {
					helped <- struct{}{}
				}
			}()
		}
	}
	mine := 0
	for run() {
		mine++
	}
	for range n - mine {
		<-helped
	}
}

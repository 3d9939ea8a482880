package serve

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cflow-dev/cflow/engine"
	"github.com/cflow-dev/cflow/generate"
)

// tickColumns bounds the tokens one tick feeds (decode tokens and prompt
// chunks together: one pass over the weights), so a long prompt delays the
// decoding sequences' next tokens by at most one such pass. It is the
// runtime's batch: each weight tile is read once for all of them.
const tickColumns = engine.MaxBatch

// minChunk is the prompt tokens a tick feeds even when decode tokens fill
// tickColumns (more slots than columns), so prompts still progress.
const minChunk = 8

// job is one admitted request: its sequence, the request's context (a
// client that goes away cancels it) and the outbox the handler reads.
type job struct {
	ctx context.Context
	seq *generate.Sequence
	out outbox
	// ticks fed this job, the sequences those ticks fed in all and their
	// engine time in nanoseconds (the request log's "sequences per tick"
	// and "ms per tick": how much batching it got, and what a tick cost).
	ticks, shared, tickNS atomic.Int64
	// decodeTicks and decodeNS count the ticks that fed no prompt chunk
	// (every sequence one decode token) and their engine time: a prompt
	// riding in a tick makes it several times longer, so the mean over
	// all ticks says little about what a decode step costs, and this is
	// the figure to hold against a decode-only engine pass (feedpass) or
	// a client's steady token interval.
	decodeTicks, decodeNS atomic.Int64
	// cachePrompt lets the job start from a slot's cached prefix (the
	// request's cache_prompt); cached is how many prompt tokens it reused
	// (usage.prompt_tokens_details.cached_tokens), set at admission.
	cachePrompt bool
	cached      atomic.Int64
	// admittedNS and firstNS are when the job got its slot and its first
	// token (Unix ns; 0: not yet): /metrics' prompt and generation rates.
	admittedNS, firstNS atomic.Int64
}

// outbox hands tokens from the scheduler to the request's handler without
// ever blocking the scheduler on a slow client.
type outbox struct {
	mu   sync.Mutex
	toks []generate.Token
	err  error
	done bool
	wake chan struct{} // capacity 1: "something new"
}

func (o *outbox) put(t generate.Token) {
	o.mu.Lock()
	o.toks = append(o.toks, t)
	o.done = o.done || t.Finish != ""
	o.mu.Unlock()
	o.notify()
}

func (o *outbox) fail(err error) {
	o.mu.Lock()
	o.err, o.done = err, true
	o.mu.Unlock()
	o.notify()
}

func (o *outbox) notify() {
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

// take returns the tokens produced since the last take, whether the job
// has ended, and its error.
func (o *outbox) take(buf []generate.Token) ([]generate.Token, bool, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	buf = append(buf[:0], o.toks...)
	o.toks = o.toks[:0]
	return buf, o.done, o.err
}

// slot is an admitted job, how much of its prompt is fed, when it was
// admitted (prompts are fed first come, first served) and its decode
// token's buffer.
type slot struct {
	j     *job
	fed   int
	order uint64
	tok   [1]int
}

// slotCache is what slot i's sequence holds between requests (the prompt
// cache): the tokens fed to it, one per KV position, and when its last
// request ended (0: never, or evicted), for least-recently-used choices.
type slotCache struct {
	toks []int
	used uint64
}

// scheduler is the one goroutine that owns the backend: between ticks it
// admits queued jobs into free slots; each tick steps every decoding
// sequence by one token and feeds chunks of new prompts, all in one
// backend.feed call (one pass over the weights), back to back.
type scheduler struct {
	be backend
	// mu guards queue: the admitted jobs waiting for a slot, first come
	// first served. A list, not a channel, so a job whose client goes
	// away leaves it at once (withdraw) instead of holding its place until
	// the scheduler reaches it; wake (capacity 1) says "queue changed".
	mu     sync.Mutex
	queue  []*job
	closed bool // close has run: submit fails jobs at once
	wake   chan struct{}
	slots  []*slot
	busy   atomic.Int32
	// kvBytes and kvTokens are what every slot's KV cache holds, updated
	// after each tick and eviction, for /metrics (the backend itself is
	// the scheduler goroutine's alone).
	kvBytes, kvTokens atomic.Int64
	stop              chan struct{}
	done              chan struct{}
	admitted          uint64
	// cache is each slot's cached sequence; cacheRAM bounds the KV bytes
	// idle slots keep (< 0: no bound); clock orders their last use.
	cache    []slotCache
	cacheRAM int64
	clock    uint64
	// scratch for tick
	feeds   []slotFeed
	filling []int
	sampled []int     // the feeds whose sequences sample this tick
	outs    []outcome // each feed's outcome
}

// newScheduler starts the scheduler over be's parallel slots; idle slots
// keep at most cacheRAM bytes of KV cache (< 0: no bound, 0: none).
func newScheduler(be backend, parallel int, cacheRAM int64) *scheduler {
	s := &scheduler{be: be, wake: make(chan struct{}, 1), slots: make([]*slot, parallel),
		stop: make(chan struct{}), done: make(chan struct{}), cache: make([]slotCache, parallel), cacheRAM: cacheRAM}
	go s.run()
	return s
}

// submit queues j. The server's admissions bound how many jobs exist, so
// the queue never refuses one.
func (s *scheduler) submit(j *job) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		j.out.fail(errDraining)
		return
	}
	s.queue = append(s.queue, j)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// withdraw takes j out of the queue if it is still there (its client
// went away before a slot was free).
func (s *scheduler) withdraw(j *job) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i := slices.Index(s.queue, j); i >= 0 {
		s.queue = slices.Delete(s.queue, i, i+1)
	}
}

// queued is how many jobs wait for a slot.
func (s *scheduler) queued() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.queue)
}

// next pops the first queued job, nil when none.
func (s *scheduler) next() *job {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.queue) == 0 {
		return nil
	}
	j := s.queue[0]
	s.queue[0] = nil
	s.queue = s.queue[1:]
	return j
}

// close stops the loop once no job is active and releases the backend.
func (s *scheduler) close() {
	close(s.stop)
	<-s.done
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	for j := s.next(); j != nil; j = s.next() {
		j.out.fail(errDraining)
	}
	s.be.close()
}

func (s *scheduler) run() {
	defer close(s.done)
	for s.admit() {
		s.tick()
	}
}

// admit fills free slots from the queue, waiting for a job only when no
// slot is busy; false means stop. Each job goes to the free slot whose
// cached tokens share the longest prefix with its prompt (place), cut back
// to that prefix: only the rest of the prompt is fed.
func (s *scheduler) admit() bool {
	for int(s.busy.Load()) < len(s.slots) {
		j := s.next()
		for j == nil {
			if s.busy.Load() > 0 {
				return true
			}
			select {
			case <-s.wake:
			case <-s.stop:
				return false
			}
			j = s.next()
		}
		if err := j.ctx.Err(); err != nil {
			j.out.fail(err) // the client left while queued
			continue
		}
		i, reuse := s.place(j)
		if s.be.truncate(i, reuse) != nil { // never: the cache holds reuse tokens
			s.be.release(i)
			reuse = 0
		}
		s.cache[i].toks = s.cache[i].toks[:reuse]
		j.cached.Store(int64(reuse))
		j.admittedNS.Store(time.Now().UnixNano())
		s.admitted++
		s.slots[i] = &slot{j: j, fed: reuse, order: s.admitted}
		s.busy.Add(1)
	}
	return true
}

// place picks j's slot among the free ones: the longest common prefix of
// its cached tokens and j's prompt (none when j opts out), ties to the
// least recently used, and how many of those tokens j reuses — all but the
// prompt's last at most, which must be fed for the next token's logits.
func (s *scheduler) place(j *job) (slot, reuse int) {
	p := j.seq.Prompt()
	slot, best := -1, -1
	for i, sl := range s.slots {
		if sl != nil {
			continue
		}
		n := 0
		if j.cachePrompt {
			n = commonPrefix(s.cache[i].toks, p)
		}
		if n > best || n == best && s.cache[i].used < s.cache[slot].used {
			slot, best = i, n
		}
	}
	return slot, min(best, len(p)-1)
}

// commonPrefix is the number of leading tokens a and b share.
func commonPrefix(a, b []int) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// idle marks slot i's request as ended now and evicts idle slots' caches,
// least recently used first, until they fit cacheRAM.
func (s *scheduler) idle(i int) {
	s.clock++
	s.cache[i].used = s.clock
	defer s.measure()
	if s.cacheRAM < 0 {
		return
	}
	for {
		var held int64
		lru := -1
		for k, sl := range s.slots {
			if sl != nil {
				continue
			}
			if b := s.be.kvBytes(k); b > 0 {
				held += b
				if lru < 0 || s.cache[k].used < s.cache[lru].used {
					lru = k
				}
			}
		}
		if held <= s.cacheRAM {
			return
		}
		s.drop(lru)
	}
}

// measure publishes the slots' KV use (kvBytes, kvTokens).
func (s *scheduler) measure() {
	var b, n int64
	for i := range s.slots {
		b += s.be.kvBytes(i)
		n += int64(len(s.cache[i].toks))
	}
	s.kvBytes.Store(b)
	s.kvTokens.Store(n)
}

// drop empties slot i's cache and frees its KV memory.
func (s *scheduler) drop(i int) {
	s.be.release(i)
	s.cache[i] = slotCache{toks: s.cache[i].toks[:0]}
}

// tick advances every busy slot in one backend.feed — one pass over the
// weights: one token for each decoding slot, then chunks of the prompts
// still being fed, in admission order, within tickColumns in all.
func (s *scheduler) tick() {
	s.feeds, s.filling = s.feeds[:0], s.filling[:0]
	budget := tickColumns
	for i, sl := range s.slots {
		if sl == nil {
			continue
		}
		if err := sl.j.ctx.Err(); err != nil {
			s.end(i, err)
			continue
		}
		if sl.fed < len(sl.j.seq.Prompt()) {
			s.filling = append(s.filling, i)
			continue
		}
		sl.tok[0] = sl.j.seq.Last()
		s.feeds = append(s.feeds, slotFeed{slot: i, toks: sl.tok[:], logits: true})
		budget--
	}
	decoding := len(s.feeds)
	slices.SortFunc(s.filling, func(a, b int) int { return cmp.Compare(s.slots[a].order, s.slots[b].order) })
	for _, i := range s.filling {
		sl := s.slots[i]
		p := sl.j.seq.Prompt()
		room := budget
		if room < minChunk && budget == tickColumns-decoding {
			room = minChunk // no prompt fed yet this tick
		}
		if n := min(len(p)-sl.fed, room); n > 0 {
			s.feeds = append(s.feeds, slotFeed{slot: i, toks: p[sl.fed : sl.fed+n], logits: sl.fed+n == len(p)})
			budget -= n
		}
	}
	if len(s.feeds) == 0 {
		return
	}
	t0 := time.Now()
	logits, errs := s.be.feed(s.feeds)
	d := time.Since(t0).Nanoseconds()
	decodeOnly := decoding == len(s.feeds)
	// Each feed's outcome, then the samples (in parallel), then the
	// deliveries in feed order.
	s.sampled = s.sampled[:0]
	s.outs = slices.Grow(s.outs[:0], len(s.feeds))[:len(s.feeds)]
	for k, f := range s.feeds {
		sl := s.slots[f.slot]
		sl.j.ticks.Add(1)
		sl.j.shared.Add(int64(len(s.feeds)))
		sl.j.tickNS.Add(d)
		if decodeOnly {
			sl.j.decodeTicks.Add(1)
			sl.j.decodeNS.Add(d)
		}
		seq := sl.j.seq
		s.outs[k] = outcome{}
		switch err := errs[k]; {
		case errors.Is(err, engine.ErrContextFull) && sl.fed == len(seq.Prompt()):
			s.outs[k] = outcome{deliver: true, tok: seq.Cut("context full")}
		case err != nil:
			s.outs[k].err = err
		case sl.fed < len(seq.Prompt()):
			s.cache[f.slot].toks = append(s.cache[f.slot].toks, f.toks...)
			if sl.fed += len(f.toks); f.logits {
				s.sampled = append(s.sampled, k)
			}
		default:
			s.cache[f.slot].toks = append(s.cache[f.slot].toks, f.toks...)
			s.sampled = append(s.sampled, k)
		}
	}
	s.sample(logits)
	defer s.measure()
	for k, f := range s.feeds {
		switch o := s.outs[k]; {
		case o.err != nil:
			s.end(f.slot, o.err)
		case o.deliver:
			s.deliver(f.slot, o.tok)
		}
	}
}

// deliver hands t to slot i's job and frees the slot on its last token.
func (s *scheduler) deliver(i int, t generate.Token) {
	s.slots[i].j.firstNS.CompareAndSwap(0, time.Now().UnixNano())
	s.slots[i].j.out.put(t)
	if t.Finish != "" {
		s.slots[i] = nil
		s.busy.Add(-1)
		s.idle(i)
	}
}

// end fails slot i's job (cancelled, or an engine error) and frees it. A
// cancelled job's tokens stay cached (they were fed whole); after an
// engine error the slot's cache is dropped, trusted no further.
func (s *scheduler) end(i int, err error) {
	s.slots[i].j.out.fail(err)
	s.slots[i] = nil
	s.busy.Add(-1)
	if !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
		s.drop(i)
	}
	s.idle(i)
}

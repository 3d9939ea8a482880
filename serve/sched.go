package serve

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/cflow-dev/cflow/generate"
	"github.com/cflow-dev/cflow/runtime"
)

// prefillChunk bounds the prompt tokens one slot feeds per tick, so a long
// prompt delays the other sequences' next tokens by at most this much.
const prefillChunk = 64

// job is one admitted request: its sequence, the request's context (a
// client that goes away cancels it) and the outbox the handler reads.
type job struct {
	ctx context.Context
	seq *generate.Sequence
	out outbox
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

// slot is an admitted job and how much of its prompt is fed.
type slot struct {
	j   *job
	fed int
}

// scheduler is the one goroutine that owns the backend: between ticks it
// admits queued jobs into free slots; each tick feeds a chunk of every
// new prompt and steps every decoding sequence by one token, all in one
// backend.step call.
type scheduler struct {
	be    backend
	in    chan *job
	slots []*slot
	busy  atomic.Int32
	stop  chan struct{}
	done  chan struct{}
	// scratch for step
	ids, toks []int
}

func newScheduler(be backend, parallel, queue int) *scheduler {
	s := &scheduler{be: be, in: make(chan *job, queue), slots: make([]*slot, parallel),
		stop: make(chan struct{}), done: make(chan struct{})}
	go s.run()
	return s
}

// submit queues j; false means the queue is full.
func (s *scheduler) submit(j *job) bool {
	select {
	case s.in <- j:
		return true
	default:
		return false
	}
}

// close stops the loop once no job is active and releases the backend.
func (s *scheduler) close() {
	close(s.stop)
	<-s.done
	for {
		select {
		case j := <-s.in:
			j.out.fail(errDraining)
		default:
			s.be.close()
			return
		}
	}
}

func (s *scheduler) run() {
	defer close(s.done)
	for s.admit() {
		s.tick()
	}
}

// admit fills free slots from the queue, waiting for a job only when no
// slot is busy; false means stop.
func (s *scheduler) admit() bool {
	for i := range s.slots {
		for s.slots[i] == nil {
			var j *job
			if s.busy.Load() == 0 {
				select {
				case j = <-s.in:
				case <-s.stop:
					return false
				}
			} else {
				select {
				case j = <-s.in:
				default:
					return true
				}
			}
			if err := j.ctx.Err(); err != nil {
				j.out.fail(err) // the client left while queued
				continue
			}
			s.be.reset(i)
			s.slots[i] = &slot{j: j}
			s.busy.Add(1)
		}
	}
	return true
}

// tick advances every busy slot: a prompt chunk for slots still
// prefilling, one token for the others (together, in one step).
func (s *scheduler) tick() {
	s.ids, s.toks = s.ids[:0], s.toks[:0]
	for i, sl := range s.slots {
		if sl == nil {
			continue
		}
		if err := sl.j.ctx.Err(); err != nil {
			s.end(i, err)
			continue
		}
		if p := sl.j.seq.Prompt(); sl.fed < len(p) {
			chunk := p[sl.fed:min(sl.fed+prefillChunk, len(p))]
			logits, err := s.be.prefill(i, chunk)
			if err != nil {
				s.end(i, err)
				continue
			}
			if sl.fed += len(chunk); sl.fed == len(p) {
				s.deliver(i, sl.j.seq.Next(logits))
			}
			continue
		}
		s.ids, s.toks = append(s.ids, i), append(s.toks, sl.j.seq.Last())
	}
	if len(s.ids) == 0 {
		return
	}
	logits, errs := s.be.step(s.ids, s.toks)
	for k, i := range s.ids {
		seq := s.slots[i].j.seq
		switch err := errs[k]; {
		case errors.Is(err, runtime.ErrContextFull):
			s.deliver(i, seq.Cut("context full"))
		case err != nil:
			s.end(i, err)
		default:
			s.deliver(i, seq.Next(logits[k]))
		}
	}
}

// deliver hands t to slot i's job and frees the slot on its last token.
func (s *scheduler) deliver(i int, t generate.Token) {
	s.slots[i].j.out.put(t)
	if t.Finish != "" {
		s.slots[i] = nil
		s.busy.Add(-1)
	}
}

// end fails slot i's job (cancelled, or an engine error) and frees it.
func (s *scheduler) end(i int, err error) {
	s.slots[i].j.out.fail(err)
	s.slots[i] = nil
	s.busy.Add(-1)
}

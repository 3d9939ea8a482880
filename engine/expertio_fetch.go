package engine

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/cflow-dev/cflow/cflowfmt"
	"golang.org/x/sys/unix"
)

// expertAlign is the offset, length and buffer alignment of expert reads:
// a multiple of every logical sector size O_DIRECT asks for (512 or 4096).
const expertAlign = 4096

// stagingSlot is one aligned staging buffer and the read that fills it.
// pending counts reads issued into the buffer and not yet completed; the
// reader decrements it and then posts a token on done. A slot goes back to
// the free list only once pending is 0 (put blocks on the token while a
// read is in flight), and get refuses a slot whose count is not 0, so a
// buffer is never handed out — or overwritten — under a read.
type stagingSlot struct {
	buf     []byte
	pending atomic.Int32
	done    chan struct{}
	waiting bool // decode thread: a read was issued and its token not yet taken

	off  int64 // file offset of buf[0]
	want int   // bytes requested
	got  int   // bytes read (reader writes before posting done)
	err  error
}

// fetcher is the expert tier of one engine: the open expert file, a pool
// of reader goroutines and the staging slots. Everything but the reader
// side (counters and slot results) belongs to the decode thread.
type fetcher struct {
	mode     ExpertIO
	path     string
	fd       int
	direct   bool
	fallback string
	readers  int
	slotSize int

	reqs chan *stagingSlot
	wg   sync.WaitGroup
	// read fills p from file offset off; tests inject slow or failing
	// readers here.
	read func(fd int, p []byte, off int64) (int, error)

	reads, bytes atomic.Int64
	mu           sync.Mutex
	inflight     int
	since        time.Time
	busy         time.Duration
	stall        time.Duration

	free  []*stagingSlot
	plans map[int]*stagedPlan // layer·E + expert
	// A lone engine's jobs, deferred routing and token failure (a batch
	// column keeps its own: Engine.staged).
	stagedState
	// waitedPuts counts slots whose read was still pending when put; a
	// test reads it to know the guard was exercised.
	waitedPuts int
	allocated  int // slots ever made; all are free between tokens
	// observe, when set (tests), sees each buffer as it is handed out
	// ("get"), as the kernels are about to read it ("use") and as put
	// starts waiting out a read still in flight on it ("wait").
	observe func(event string, buf []byte)
}

// newFetcher opens m's file for expert reads (O_DIRECT when the
// filesystem allows it, buffered pread otherwise) and starts the readers;
// openDirect, when not nil, stands in for the O_DIRECT open (tests).
func newFetcher(m *cflowfmt.Model, mode ExpertIO, openDirect func(string) (int, error)) (*fetcher, error) {
	x := &fetcher{mode: mode, path: m.Path, read: preadFull, plans: map[int]*stagedPlan{}}
	for _, l := range m.Layers {
		for _, r := range l.Experts {
			lo, hi := r.Offset&^(expertAlign-1), alignExpert(r.End())
			x.slotSize = max(x.slotSize, int(hi-lo))
		}
	}
	if x.slotSize == 0 {
		return nil, fmt.Errorf("runtime: expert I/O %s: the model has no expert ranges", mode)
	}
	probe := alignedBuf(expertAlign)
	fd, direct, why, err := openExpertFile(m.Path, probe, openDirect)
	if err != nil {
		return nil, fmt.Errorf("runtime: expert I/O %s needs the model file: %w", mode, err)
	}
	x.fd, x.direct, x.fallback = fd, direct, why
	x.readers = max(1, min(int(m.Header.TopK), 8))
	x.reqs = make(chan *stagingSlot, 64)
	for range x.readers {
		x.wg.Add(1)
		go x.serve()
	}
	return x, nil
}

func alignExpert(off int64) int64 { return (off + expertAlign - 1) &^ (expertAlign - 1) }

// alignedBuf returns n bytes starting at an expertAlign boundary (the Go
// heap does not move objects, so the alignment holds).
func alignedBuf(n int) []byte {
	b := make([]byte, n+expertAlign)
	o := int(-uintptr(unsafe.Pointer(&b[0])) & (expertAlign - 1))
	return b[o : o+n : o+n]
}

// serve is one reader goroutine.
func (x *fetcher) serve() {
	defer x.wg.Done()
	for s := range x.reqs {
		x.mu.Lock()
		if x.inflight == 0 {
			x.since = time.Now()
		}
		x.inflight++
		x.mu.Unlock()
		n, err := x.read(x.fd, s.buf[:s.want], s.off)
		x.mu.Lock()
		if x.inflight--; x.inflight == 0 {
			x.busy += time.Since(x.since)
		}
		x.mu.Unlock()
		x.reads.Add(1)
		x.bytes.Add(int64(n))
		s.got, s.err = n, err
		s.pending.Add(-1)
		s.done <- struct{}{}
	}
}

// get hands out a free slot (allocating one when none is free).
func (x *fetcher) get() *stagingSlot {
	var s *stagingSlot
	if n := len(x.free); n > 0 {
		s, x.free = x.free[n-1], x.free[:n-1]
	} else {
		s = &stagingSlot{buf: alignedBuf(x.slotSize), done: make(chan struct{}, 1)}
		x.allocated++
	}
	if s.waiting || s.pending.Load() != 0 {
		panic("runtime: staging slot handed out with a read in flight")
	}
	if x.observe != nil {
		x.observe("get", s.buf)
	}
	return s
}

// issue queues a read of want bytes at off into s.
func (x *fetcher) issue(s *stagingSlot, off int64, want int) {
	s.off, s.want, s.got, s.err = off, want, 0, nil
	s.pending.Add(1)
	s.waiting = true
	x.reqs <- s
}

// await blocks until s's read completed, counting the blocked time as
// stall.
func (x *fetcher) await(s *stagingSlot) {
	if !s.waiting {
		return
	}
	select {
	case <-s.done:
	default:
		t0 := time.Now()
		<-s.done
		x.stall += time.Since(t0)
	}
	s.waiting = false
}

// put returns s to the free list once no read is pending on it.
func (x *fetcher) put(s *stagingSlot) {
	if s.waiting {
		if s.pending.Load() > 0 {
			x.waitedPuts++
			if x.observe != nil {
				x.observe("wait", s.buf)
			}
		}
		<-s.done
		s.waiting = false
	}
	if s.pending.Load() != 0 {
		panic("runtime: staging slot freed with a read in flight")
	}
	x.free = append(x.free, s)
}

// close waits for every issued read, then closes the file.
func (x *fetcher) close() {
	close(x.reqs)
	x.wg.Wait()
	closeExpertFile(x.fd)
}

func (x *fetcher) snapshot() ExpertIOStats {
	x.mu.Lock()
	busy := x.busy
	if x.inflight > 0 {
		busy += time.Since(x.since)
	}
	x.mu.Unlock()
	return ExpertIOStats{Mode: x.mode, Direct: x.direct, Fallback: x.fallback, Readers: x.readers,
		Reads: x.reads.Load(), Bytes: x.bytes.Load(), Busy: busy, Stall: x.stall}
}

// preadFull reads len(p) bytes at off, stopping early only at end of file
// (direct reads may come back short).
func preadFull(fd int, p []byte, off int64) (int, error) {
	n := 0
	for n < len(p) {
		m, err := unix.Pread(fd, p[n:], off+int64(n))
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return n, err
		}
		if m == 0 {
			break
		}
		n += m
	}
	return n, nil
}

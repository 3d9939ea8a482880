package expertio

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

// Slot is one aligned staging buffer and the read that fills it.
// pending counts reads issued into the buffer and not yet completed; the
// reader decrements it and then posts a token on done. A slot goes back to
// the free list only once pending is 0 (put blocks on the token while a
// read is in flight), and get refuses a slot whose count is not 0, so a
// buffer is never handed out — or overwritten — under a read.
type Slot struct {
	buf     []byte
	pending atomic.Int32
	done    chan struct{}
	waiting bool // decode thread: a read was issued and its token not yet taken

	off  int64 // file offset of buf[0]
	want int   // bytes requested
	got  int   // bytes read (reader writes before posting done)
	err  error
}

// Tier is the expert tier of one engine: the open model file, a pool of
// reader goroutines and the staging slots. Everything but the reader side
// (counters and slot results) belongs to the engine's decode goroutine:
// Stage, Await, Put and Stats are called from it alone.
type Tier struct {
	mode     Mode
	path     string
	fd       int
	direct   bool
	fallback string
	readers  int
	slotSize int

	reqs chan *Slot
	wg   sync.WaitGroup
	read func(fd int, p []byte, off int64) (int, error) // Hooks.Read or ReadFull

	reads, bytes atomic.Int64
	mu           sync.Mutex
	inflight     int
	since        time.Time
	busy         time.Duration
	stall        time.Duration

	free       []*Slot
	waitedPuts int
	allocated  int
	observe    func(event string, buf []byte)
}

// Hooks stand in for the filesystem in tests; the zero value is the real
// one. They exist because the tier's guarantees (no slot reused in flight,
// the fallback when O_DIRECT is refused) are about timing and filesystems
// a test cannot otherwise arrange.
type Hooks struct {
	// OpenDirect replaces the O_DIRECT open (a filesystem that refuses
	// direct I/O answers EINVAL).
	OpenDirect func(path string) (int, error)
	// Read fills p from file offset off on a reader goroutine (a slow or
	// failing disk); ReadFull is the real one, for a hook to wrap.
	Read func(fd int, p []byte, off int64) (int, error)
	// Observe sees, on the decode goroutine, each buffer as Stage hands it
	// out ("get"), as Await hands it to the kernels ("use") and as Put
	// starts waiting out a read still in flight on it ("wait").
	Observe func(event string, buf []byte)
}

// Open opens path for expert reads (O_DIRECT when the filesystem allows
// it, buffered pread otherwise) and starts readers goroutines (at least
// one). ranges are every expert's byte range in the file: a slot holds the
// largest, widened to the direct-I/O alignment.
func Open(path string, mode Mode, ranges []cflowfmt.Range, readers int, hooks Hooks) (*Tier, error) {
	if mode == Mmap || !mode.Valid() {
		return nil, fmt.Errorf("expertio: no staged tier for mode %v", mode)
	}
	x := &Tier{mode: mode, path: path, read: ReadFull, observe: hooks.Observe}
	if hooks.Read != nil {
		x.read = hooks.Read
	}
	for _, r := range ranges {
		lo, hi := r.Offset&^(expertAlign-1), alignExpert(r.End())
		x.slotSize = max(x.slotSize, int(hi-lo))
	}
	if x.slotSize == 0 {
		return nil, fmt.Errorf("expertio: %s: the model has no expert ranges", mode)
	}
	probe := alignedBuf(expertAlign)
	fd, direct, why, err := openExpertFile(path, probe, hooks.OpenDirect)
	if err != nil {
		return nil, fmt.Errorf("expertio: %s needs the model file: %w", mode, err)
	}
	x.fd, x.direct, x.fallback = fd, direct, why
	x.readers = max(1, readers)
	x.reqs = make(chan *Slot, 64)
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
func (x *Tier) serve() {
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

// Stage takes a slot and issues the read of the bytes r into it, widened
// to the direct-I/O alignment; Await before reading the slot, Put when done.
func (x *Tier) Stage(r cflowfmt.Range) *Slot {
	lo := r.Offset &^ (expertAlign - 1)
	s := x.get()
	x.issue(s, lo, int(alignExpert(r.End())-lo))
	return s
}

// get hands out a free slot (allocating one when none is free).
func (x *Tier) get() *Slot {
	var s *Slot
	if n := len(x.free); n > 0 {
		s, x.free = x.free[n-1], x.free[:n-1]
	} else {
		s = &Slot{buf: alignedBuf(x.slotSize), done: make(chan struct{}, 1)}
		x.allocated++
	}
	if s.waiting || s.pending.Load() != 0 {
		panic("expertio: staging slot handed out with a read in flight")
	}
	if x.observe != nil {
		x.observe("get", s.buf)
	}
	return s
}

// issue queues a read of want bytes at off into s.
func (x *Tier) issue(s *Slot, off int64, want int) {
	s.off, s.want, s.got, s.err = off, want, 0, nil
	s.pending.Add(1)
	s.waiting = true
	x.reqs <- s
}

// Await blocks until s's read completed, counting the blocked time as
// stall, and returns what it read: the bytes from file offset off (as many
// as the file had, up to the requested range) or the read's error.
func (x *Tier) Await(s *Slot) (data []byte, off int64, err error) {
	if s.waiting {
		select {
		case <-s.done:
		default:
			t0 := time.Now()
			<-s.done
			x.stall += time.Since(t0)
		}
		s.waiting = false
	}
	if s.err == nil && x.observe != nil {
		x.observe("use", s.buf)
	}
	return s.buf[:s.got], s.off, s.err
}

// Put returns s to the free list once no read is pending on it (waiting
// the read out if need be): a slot is reused only after its read ended.
func (x *Tier) Put(s *Slot) {
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
		panic("expertio: staging slot freed with a read in flight")
	}
	x.free = append(x.free, s)
}

// Close waits for every issued read, then closes the file.
func (x *Tier) Close() {
	close(x.reqs)
	x.wg.Wait()
	closeExpertFile(x.fd)
}

// Stats is the tier's counters so far.
func (x *Tier) Stats() Stats {
	x.mu.Lock()
	busy := x.busy
	if x.inflight > 0 {
		busy += time.Since(x.since)
	}
	x.mu.Unlock()
	return Stats{Mode: x.mode, Direct: x.direct, Fallback: x.fallback, Readers: x.readers,
		Reads: x.reads.Load(), Bytes: x.bytes.Load(), Busy: busy, Stall: x.stall}
}

// Mode is the schedule the tier was opened for (Sync or Direct).
func (x *Tier) Mode() Mode { return x.mode }

// Path is the file the tier reads, for errors naming it.
func (x *Tier) Path() string { return x.path }

// SlotCounts says how the staging slots were used, so a test can prove
// they are recycled and that Put's wait for a read in flight ran.
type SlotCounts struct {
	Allocated  int // slots ever made; all are free between tokens
	Free       int // slots on the free list now
	WaitedPuts int // Puts that found a read still pending and waited
}

// Slots reports the slot counters.
func (x *Tier) Slots() SlotCounts {
	return SlotCounts{Allocated: x.allocated, Free: len(x.free), WaitedPuts: x.waitedPuts}
}

// ReadFull reads len(p) bytes at off, stopping early only at end of file
// (direct reads may come back short). It is the tier's reader, exported
// for a Hooks.Read that wraps it.
func ReadFull(fd int, p []byte, off int64) (int, error) {
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

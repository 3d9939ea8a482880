package numa

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
)

// Kind says what memory a placement request covers.
type Kind int

const (
	// InPlace is a shard's byte range of the model file's mapping, bound
	// where it lies because the file's shard plan matches the machine.
	InPlace Kind = iota
	// Copy is anonymous node-local memory the engine copied a re-planned
	// node's tiles into (the file's plan did not match the machine).
	Copy
	// Scratch is a node's partial-sum and output buffers.
	Scratch
)

func (k Kind) String() string {
	switch k {
	case InPlace:
		return "in-place"
	case Copy:
		return "copy"
	case Scratch:
		return "scratch"
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// Request is one memory-policy call the engine wants. Node −1 means the
// range is read by every node (a replicated matrix) and is interleaved over
// all of them instead of bound to one.
type Request struct {
	Kind Kind
	What string // e.g. "layer 3 q/k/v", "layer 1 experts 0-3"
	Node int    // index into Topology.Nodes, or −1
	Mem  []int  // kernel memory node ids the policy names
	// File is the planned file byte range [from, to) of an InPlace request;
	// Addr/Len is the page-aligned span actually handed to mbind.
	File      [2]int64
	Addr, Len uintptr
}

// Placer applies placement requests. The engine calls it once per range at
// load; a test injects a Recorder to see exactly which ranges were asked
// for. Errors are reported in the run summary, never fatal: placement only
// changes speed, not results.
type Placer interface {
	Place(r Request) error
}

// ErrNoMemoryNode is returned for a request naming only memory nodes this
// machine lacks: a simulated topology's extra nodes.
var ErrNoMemoryNode = errors.New("no such memory node on this machine")

// Kernel is the real Placer: mbind(2) with MPOL_BIND (one node) or
// MPOL_INTERLEAVE (several), moving pages already resident for InPlace
// ranges (MPOL_MF_MOVE). Nodes absent from the machine are skipped with
// ErrNoMemoryNode rather than passed to a syscall that would reject them.
type Kernel struct {
	mem map[int]bool
}

// NewKernel reads the machine's memory nodes from sysfs.
func NewKernel() *Kernel {
	k := &Kernel{mem: map[int]bool{}}
	for _, id := range MemoryNodes() {
		k.mem[id] = true
	}
	return k
}

// Place implements Placer.
func (k *Kernel) Place(r Request) error {
	var nodes []int
	for _, id := range r.Mem {
		if k.mem[id] {
			nodes = append(nodes, id)
		}
	}
	if len(nodes) == 0 {
		return fmt.Errorf("%s on memory node(s) %v: %w", r.What, r.Mem, ErrNoMemoryNode)
	}
	if r.Len == 0 {
		return nil
	}
	mode, flags := MpolBind, 0
	if r.Node < 0 || len(nodes) > 1 {
		mode = MpolInterleave
	}
	if r.Kind == InPlace {
		flags = MpolMFMove
	}
	if err := Mbind(r.Addr, r.Len, mode, nodes, flags); err != nil {
		return fmt.Errorf("%s: %w", r.What, err)
	}
	return nil
}

// MemoryNodes lists the machine's memory nodes (sysfs has_memory, else
// online, else node 0).
func MemoryNodes() []int {
	for _, f := range []string{"has_memory", "online"} {
		if b, err := os.ReadFile(filepath.Join(SysfsNodes, f)); err == nil {
			if ids, err := ParseCPUList(string(b)); err == nil && len(ids) > 0 {
				return ids
			}
		}
	}
	return []int{0}
}

// Recorded is one request a Recorder saw and what its Next returned.
type Recorded struct {
	Request
	Err error
}

// Recorder is a Placer that logs every request, then forwards it to Next
// (nil: log only). Safe for concurrent use.
type Recorder struct {
	Next Placer
	mu   sync.Mutex
	log  []Recorded
}

// Place implements Placer.
func (r *Recorder) Place(q Request) error {
	var err error
	if r.Next != nil {
		err = r.Next.Place(q)
	}
	r.mu.Lock()
	r.log = append(r.log, Recorded{Request: q, Err: err})
	r.mu.Unlock()
	return err
}

// Log returns a copy of the requests seen so far, in call order.
func (r *Recorder) Log() []Recorded {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Recorded(nil), r.log...)
}

// PageSpan widens [addr, addr+n) to whole pages, the unit mbind works in.
// Neighbouring shards may share a boundary page; whichever is placed last
// owns it (at most one page per shard boundary).
func PageSpan(addr, n uintptr) (uintptr, uintptr) {
	ps := uintptr(os.Getpagesize())
	lo := addr &^ (ps - 1)
	hi := (addr + n + ps - 1) &^ (ps - 1)
	return lo, hi - lo
}

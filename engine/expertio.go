package engine

import (
	"fmt"
	"strings"
	"time"
)

// ExpertIO selects how the router-selected experts' tiles reach the
// kernels. Attention, dense FFN, router and embeddings are always read
// from the memory mapping; only the expert bank — the part of a MoE model
// too large to keep in RAM — can be moved to a disk tier. All three modes
// compute bit-identical outputs: only when the bytes arrive changes.
type ExpertIO uint8

const (
	// ExpertIOMmap reads expert tiles through the file mapping (page
	// cache), computing each expert at its routing layer.
	ExpertIOMmap ExpertIO = iota
	// ExpertIOSync reads the selected experts' byte ranges with O_DIRECT
	// into staging buffers and blocks on them at the routing layer: the
	// report's stall arm, paying expert I/O on the critical path.
	ExpertIOSync
	// ExpertIODirect issues the same reads at the routing layer and awaits
	// them at the injection layer (ℓ+δe, DelayedSum clamped to L−1), so the
	// read overlaps the expert_delay layers in between; the expert is
	// computed there from the saved router activation (§3.9.4). Styles that
	// inject in the routing layer itself await at once, as ExpertIOSync.
	ExpertIODirect
)

var expertIONames = [...]string{"mmap", "sync", "direct"}

func (x ExpertIO) String() string {
	if int(x) < len(expertIONames) {
		return expertIONames[x]
	}
	return fmt.Sprintf("ExpertIO(%d)", uint8(x))
}

// ParseExpertIO reads a --expert-io value, so run and bench accept the
// same names.
func ParseExpertIO(s string) (ExpertIO, error) {
	for i, n := range expertIONames {
		if strings.EqualFold(s, n) {
			return ExpertIO(i), nil
		}
	}
	return 0, fmt.Errorf("expert I/O %q: want %s", s, strings.Join(expertIONames[:], ", "))
}

// ExpertIOStats describes the staged expert tier, so run can report what
// the disk did and the A/B measurement can split a token's time into
// compute and expert-read stall.
type ExpertIOStats struct {
	Mode ExpertIO
	// Direct is true when reads bypass the page cache (O_DIRECT); false
	// means buffered pread, with the reason in Fallback.
	Direct   bool
	Fallback string
	Readers  int
	// Reads and Bytes count expert-range reads and the bytes they moved
	// (each range widened to the direct-I/O alignment).
	Reads, Bytes int64
	// Busy is wall time with at least one read in flight (the storage
	// tier's busy time, IO_eff); Stall is time the decode thread spent
	// blocked waiting for reads (what the overlap did not hide).
	Busy, Stall time.Duration
}

// Sub is s − o for the counters, keeping s's description; run uses it to
// report decode-only figures.
func (s ExpertIOStats) Sub(o ExpertIOStats) ExpertIOStats {
	s.Reads -= o.Reads
	s.Bytes -= o.Bytes
	s.Busy -= o.Busy
	s.Stall -= o.Stall
	return s
}

// Describe is the one-line form run prints, e.g. "direct (O_DIRECT, 2
// readers)" or the fallback and its reason.
func (s ExpertIOStats) Describe() string {
	switch {
	case s.Mode == ExpertIOMmap:
		return "mmap"
	case s.Direct:
		return fmt.Sprintf("%s (O_DIRECT, %d readers)", s.Mode, s.Readers)
	}
	return fmt.Sprintf("%s (buffered pread, %d readers: %s)", s.Mode, s.Readers, s.Fallback)
}

// ExpertIOStats returns the expert tier's counters (zero except Mode under
// ExpertIOMmap).
func (e *Engine) ExpertIOStats() ExpertIOStats {
	if e.xio == nil {
		return ExpertIOStats{}
	}
	return e.xio.snapshot()
}

// initExpertIO starts the expert tier for a staged mode on a MoE model
// (openDirect: Options.openDirect).
func (e *Engine) initExpertIO(mode ExpertIO, openDirect func(string) (int, error)) error {
	if int(mode) >= len(expertIONames) {
		return fmt.Errorf("runtime: %v", mode)
	}
	if mode == ExpertIOMmap || e.h.NumExperts == 0 {
		return nil
	}
	x, err := newFetcher(e.m, mode, openDirect)
	e.xio = x
	return err
}

// Package expertio is the engine's disk tier for a MoE model's expert
// bank, the part of a model too large to keep in RAM: it reads the
// router-selected experts' byte ranges with O_DIRECT (buffered pread where
// the filesystem refuses direct I/O) on a few reader goroutines into
// aligned staging slots, and counts what the disk did. It knows bytes and
// files only; when a slot is read, parsed and computed is the engine's
// schedule (Sync blocks at the routing layer, Direct awaits at the
// injection layer). A slot is never handed out, read into again or handed
// back while a read into it is in flight.
package expertio

import (
	"fmt"
	"strings"
	"time"
)

// Mode selects how the router-selected experts' tiles reach the kernels.
// Attention, dense FFN, router and embeddings are always read from the
// memory mapping; only the expert bank can be moved to the disk tier. All
// three modes compute bit-identical outputs: only when the bytes arrive
// changes.
type Mode uint8

const (
	// Mmap reads expert tiles through the file mapping (page cache),
	// computing each expert at its routing layer; no Tier is opened.
	Mmap Mode = iota
	// Sync reads the selected experts' byte ranges with O_DIRECT into
	// staging slots and blocks on them at the routing layer: the report's
	// stall arm, paying expert I/O on the critical path.
	Sync
	// Direct issues the same reads at the routing layer and awaits them at
	// the injection layer (ℓ+δe, DelayedSum clamped to L−1), so the read
	// overlaps the expert_delay layers in between; the expert is computed
	// there from the saved router activation (§3.9.4). Styles that inject
	// in the routing layer itself await at once, as Sync.
	Direct
)

var modeNames = [...]string{"mmap", "sync", "direct"}

// String is the mode's --expert-io name.
func (m Mode) String() string {
	if m.Valid() {
		return modeNames[m]
	}
	return fmt.Sprintf("expertio.Mode(%d)", uint8(m))
}

// Valid reports whether m is one of the three modes, so a caller can
// refuse an out-of-range value instead of running some default.
func (m Mode) Valid() bool { return int(m) < len(modeNames) }

// Parse reads a --expert-io value, so run and bench accept the same names.
func Parse(s string) (Mode, error) {
	for i, n := range modeNames {
		if strings.EqualFold(s, n) {
			return Mode(i), nil
		}
	}
	return 0, fmt.Errorf("expert I/O %q: want %s", s, strings.Join(modeNames[:], ", "))
}

// Stats describes the staged expert tier, so run can report what the disk
// did and the A/B measurement can split a token's time into compute and
// expert-read stall.
type Stats struct {
	Mode Mode
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
func (s Stats) Sub(o Stats) Stats {
	s.Reads -= o.Reads
	s.Bytes -= o.Bytes
	s.Busy -= o.Busy
	s.Stall -= o.Stall
	return s
}

// Describe is the one-line form run prints, e.g. "direct (O_DIRECT, 2
// readers)" or the fallback and its reason.
func (s Stats) Describe() string {
	switch {
	case s.Mode == Mmap:
		return "mmap"
	case s.Direct:
		return fmt.Sprintf("%s (O_DIRECT, %d readers)", s.Mode, s.Readers)
	}
	return fmt.Sprintf("%s (buffered pread, %d readers: %s)", s.Mode, s.Readers, s.Fallback)
}

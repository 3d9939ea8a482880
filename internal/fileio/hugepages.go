package fileio

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// HugePages is how much of a mapping the kernel maps with 2 MiB (PMD)
// page-table entries. Decode streams the whole model mapping once per
// token; the part on 4 KiB pages costs a TLB miss every 4 KiB. On the
// Zen 3 VM (docs/PERFORMANCE.md, log at 0382674, "Session 7: the model mapping on 2 MiB
// pages") the TinyLlama-geometry Q4_0 file decoded 1.12× (one thread) and
// 1.22× (two) faster from 2 MiB folios than from 4 KiB ones, medians of
// interleaved rounds.
type HugePages struct {
	Huge int64 // bytes in 2 MiB mappings (FilePmdMapped + ShmemPmdMapped + AnonHugePages)
	Size int64 // bytes of the mapping measured
}

// Fraction is Huge/Size (0 for an empty mapping).
func (h HugePages) Fraction() float64 {
	if h.Size <= 0 {
		return 0
	}
	return float64(h.Huge) / float64(h.Size)
}

// String is "590 of 591 MiB", the form bench and recache print.
func (h HugePages) String() string {
	return fmt.Sprintf("%d of %d MiB", (h.Huge+1<<19)>>20, (h.Size+1<<19)>>20)
}

// parseSmapsHuge sums, over the VMAs of a /proc/PID/smaps text that overlap
// the address range [lo, hi), the bytes mapped with PMD entries and the
// bytes of the range they cover. A VMA only partly inside the range adds
// only its overlap to Size and all of its huge bytes, capped at that
// overlap: smaps does not say where in a VMA its huge pages lie.
func parseSmapsHuge(r io.Reader, lo, hi uintptr) (HugePages, error) {
	var h HugePages
	var in bool       // the current VMA overlaps [lo, hi)
	var overlap int64 // the current VMA's overlap
	var vmaHuge int64
	flush := func() {
		if in {
			h.Huge += min(vmaHuge, overlap)
			h.Size += overlap
		}
		in, overlap, vmaHuge = false, 0, 0
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20) // a VMA's path may be long
	for sc.Scan() {
		line := sc.Text()
		if start, end, ok := vmaRange(line); ok {
			flush()
			if start < hi && end > lo {
				in, overlap = true, int64(min(end, hi)-max(start, lo))
			}
			continue
		}
		if !in {
			continue
		}
		key, rest, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		switch key {
		case "FilePmdMapped", "ShmemPmdMapped", "AnonHugePages":
			kb, err := smapsKB(rest)
			if err != nil {
				return HugePages{}, fmt.Errorf("smaps: %s: %w", key, err)
			}
			vmaHuge += kb << 10
		}
	}
	if err := sc.Err(); err != nil {
		return HugePages{}, fmt.Errorf("smaps: %w", err)
	}
	flush()
	return h, nil
}

// vmaRange parses a VMA header line of smaps ("7f12a000-7f12c000 r--s
// 00000000 fe:01 1234 /path"); field lines ("Rss:  4 kB") return false.
func vmaRange(line string) (start, end uintptr, ok bool) {
	f, _, _ := strings.Cut(line, " ")
	a, b, found := strings.Cut(f, "-")
	if !found {
		return 0, 0, false
	}
	s, err1 := strconv.ParseUint(a, 16, 64)
	e, err2 := strconv.ParseUint(b, 16, 64)
	if err1 != nil || err2 != nil || e < s {
		return 0, 0, false
	}
	return uintptr(s), uintptr(e), true
}

// smapsKB parses a field value ("   2048 kB").
func smapsKB(v string) (int64, error) {
	n, unit, _ := strings.Cut(strings.TrimSpace(v), " ")
	if unit != "kB" {
		return 0, fmt.Errorf("value %q: want a count of kB", strings.TrimSpace(v))
	}
	return strconv.ParseInt(n, 10, 64)
}

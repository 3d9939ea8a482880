package convert

import (
	"encoding/binary"
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/cflow-dev/cflow/internal/fileio"
	"github.com/x448/float16"
)

// checkFinite refuses a tensor holding NaN or ±Inf, naming it and the first
// bad element: such a weight converts to garbage that decodes without any
// error. It runs once per tensor when the checkpoint is opened, before
// anything is written. A value is non-finite exactly when its exponent bits
// are all ones, so the scan tests eight bytes at a time for a lane whose
// exponent field equals the mask (a zero lane of (x & m) ^ m).
func (t *tensor) checkFinite() error {
	if t.foreign != nil {
		return nil // checked once dequantized (requantForeign)
	}
	if t.dt.blocks() {
		return t.checkFiniteScales()
	}
	return t.checkFiniteRange(0, len(t.data))
}

// checkFiniteRange is checkFinite over bytes [from, to) of the data, both
// multiples of the element size.
func (t *tensor) checkFiniteRange(from, to int) error {
	var mask, lanes uint64
	es := t.dt.size()
	switch t.dt {
	case dtF32:
		mask, lanes = 0x7f800000_7f800000, 0x00000001_00000001
	case dtF16:
		mask, lanes = 0x7c00_7c00_7c00_7c00, 0x0001_0001_0001_0001
	case dtBF16:
		mask, lanes = 0x7f80_7f80_7f80_7f80, 0x0001_0001_0001_0001
	default:
		return nil
	}
	high := lanes << (8*es - 1) // each lane's top bit
	b := t.data[:to]
	i := from
	for ; i+8 <= len(b); i += 8 {
		y := binary.LittleEndian.Uint64(b[i:])&mask ^ mask
		if (y-lanes)&^y&high != 0 {
			break // a lane is zero: locate it below
		}
	}
	for ; i+es <= len(b); i += es {
		var v float64
		switch t.dt {
		case dtF32:
			v = float64(math.Float32frombits(binary.LittleEndian.Uint32(b[i:])))
		case dtF16:
			v = float64(float16.Frombits(binary.LittleEndian.Uint16(b[i:])).Float32())
		case dtBF16:
			v = float64(math.Float32frombits(uint32(binary.LittleEndian.Uint16(b[i:])) << 16))
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			k := i / es
			return fmt.Errorf("%s: tensor %s: non-finite value %v at index %d (row %d, column %d); refusing to convert a NaN/Inf weight",
				t.file, t.name, v, k, k/max(1, t.cols), k%max(1, t.cols))
		}
	}
	return nil
}

// finiteChunk is the unit of checkFiniteAll's work: a multiple of 8 and of
// every element size, large enough that a guard per chunk costs nothing.
const finiteChunk = 4 << 20

// checkFiniteAll is checkFinite over ts on every core: the tensors' bytes
// are cut into chunks that GOMAXPROCS goroutines scan, each read under a
// fault guard (fileio.GuardFaultIn with locate, as the guard is per
// goroutine). The error is the one a scan of ts in order would meet first.
func checkFiniteAll(ts []*tensor, locate func(addr uintptr) (string, int64)) error {
	type chunk struct{ t, from, to int }
	var chunks []chunk
	for i, t := range ts {
		for a := 0; a < len(t.data); a += finiteChunk {
			chunks = append(chunks, chunk{i, a, min(a+finiteChunk, len(t.data))})
		}
	}
	errs := make([]error, len(chunks))
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := min(runtime.GOMAXPROCS(0), len(chunks)); w > 0; w-- {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := int(next.Add(1) - 1); k < len(chunks); k = int(next.Add(1) - 1) {
				c := chunks[k]
				errs[k] = fileio.GuardFaultIn(locate, func() error { return ts[c.t].checkFiniteRange(c.from, c.to) })
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// locateIn is a fault locator for one mapped file held in b: the offset of
// a faulting address in it.
func locateIn(file string, b []byte) func(addr uintptr) (string, int64) {
	return func(addr uintptr) (string, int64) {
		if len(b) > 0 {
			if base := uintptrOf(b); addr >= base && addr-base < uintptr(len(b)) {
				return file, int64(addr - base)
			}
		}
		return file, 0
	}
}

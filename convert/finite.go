package convert

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/x448/float16"
)

// checkFinite refuses a tensor holding NaN or ±Inf, naming it and the first
// bad element: such a weight converts to garbage that decodes without any
// error. It runs once per tensor when the checkpoint is opened, before
// anything is written. A value is non-finite exactly when its exponent bits
// are all ones, so the scan tests eight bytes at a time for a lane whose
// exponent field equals the mask (a zero lane of (x & m) ^ m).
func (t *tensor) checkFinite() error {
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
	b := t.data
	i := 0
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

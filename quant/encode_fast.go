package quant

import (
	"encoding/binary"
	"math"
	"unsafe"

	"github.com/x448/float16"
)

// The fast encoders: encodeRef's rounding contract restated without
// float64 math calls (and in AVX2 assembly where the CPU has it), several
// times faster, which is what conversion throughput hinges on. Tests hold
// both paths to encodeRef bit for bit; groups with NaN or ±Inf are handed
// to encodeRef itself, since their exact bytes follow its implementation
// rather than the written contract.

// encodeAsm: the assembly group quantizers can run here. Set at package
// init from the one CPU check and never written again.
var encodeAsm = haveEncodeAsm && CPU().AVX2

// f16Table maps f16 bits to f32 (256 KiB, built at package init): a lookup
// is several times faster than float16's bit twiddling, and conversion of
// f16 checkpoints runs through it.
var f16Table = func() *[1 << 16]float32 {
	var t [1 << 16]float32
	for i := range t {
		t[i] = float16.Frombits(uint16(i)).Float32()
	}
	return &t
}()

// F16ToF32 widens one IEEE half (its bits) exactly, through a table.
func F16ToF32(h uint16) float32 { return f16Table[h] }

// encodeInto is EncodeInto with the path chosen by the caller (tests run
// both).
func encodeInto(t *Tile, w []float32, stride int, asm bool) {
	if t.Type != Q4_0 && t.Type != Q8_0 {
		encodeRef(t, w, stride)
		return
	}
	for r := 0; r < t.Rows; r++ {
		row := w[r*stride : r*stride+t.Cols]
		if asm {
			encodeRowF32Asm(t, r, row)
		} else {
			encodeRowF32Go(t, r, row)
		}
	}
}

// EncodeRowF16 quantizes row r of a Q4_0 or Q8_0 tile from src, the row's
// t.Cols values as little-endian IEEE halves (a checkpoint's bytes, read in
// place), into t's buffers: the bytes are exactly EncodeInto's on the
// widened values, without writing or re-reading an f32 copy. The converter
// walks a stripe row by row across its tiles, so each checkpoint row is
// read front to back once.
func EncodeRowF16(t *Tile, r int, src []byte) {
	encodeRowF16(t, r, src, encodeAsm)
}

func encodeRowF16(t *Tile, r int, src []byte, asm bool) {
	if t.Type != Q4_0 && t.Type != Q8_0 {
		panic("quant: EncodeRowF16 needs a Q4_0 or Q8_0 tile, not " + t.Type.String())
	}
	src = src[:2*t.Cols]
	if asm {
		encodeRowF16Asm(t, r, src)
	} else {
		encodeRowF16Go(t, r, src)
	}
}

// encodeGroupRef runs encodeRef on one group (zero-padded) through a 1×32
// tile and stores it as group idx of t.
func encodeGroupRef(t *Tile, b *[GroupSize]float32, idx int) {
	gb := groupBytes(t.Type)
	one := Tile{Type: t.Type, Rows: 1, Cols: GroupSize, Scales: t.Scales[idx*2 : idx*2+2], Data: t.Data[idx*gb : idx*gb+gb]}
	encodeRef(&one, b[:], GroupSize)
}

// groupBytes is a group's data size in a quantized tile.
func groupBytes(q Type) int { return q.DataBytes(1, GroupSize) }

// encodeGroup quantizes one finite group whose max|v| is amax into group
// idx of t.
func encodeGroup(t *Tile, b *[GroupSize]float32, amax float32, idx int) {
	var s float32
	if t.Type == Q4_0 {
		s = q4Scaled(b, amax, t.Data[idx*16:idx*16+16])
	} else {
		s = q8Scaled(b, amax, t.Data[idx*32:idx*32+32])
	}
	binary.LittleEndian.PutUint16(t.Scales[idx*2:], float16.Fromfloat32(s).Bits())
}

// encodeRowF32Go is the Go path for one row of f32 weights.
func encodeRowF32Go(t *Tile, r int, row []float32) {
	cols, g := t.Cols, Groups(t.Cols)
	var block [GroupSize]float32
	for gi := 0; gi < g; gi++ {
		src := row[gi*GroupSize : min(cols, (gi+1)*GroupSize)]
		b := &block
		if len(src) == GroupSize {
			b = (*[GroupSize]float32)(src)
		} else {
			block = [GroupSize]float32{}
			copy(block[:], src)
		}
		mb, ok := absMaxBits(b)
		if !ok {
			encodeGroupRef(t, b, r*g+gi)
			continue
		}
		encodeGroup(t, b, math.Float32frombits(mb), r*g+gi)
	}
}

// encodeRowF16Go is the Go path for one row of f16 weights: each group is
// widened into a stack array, tracking max|v| on the f16 bits on the way.
func encodeRowF16Go(t *Tile, r int, src []byte) {
	cols, g := t.Cols, Groups(t.Cols)
	var block [GroupSize]float32
	for gi := 0; gi < g; gi++ {
		n := min(GroupSize, cols-gi*GroupSize)
		gs := src[gi*GroupSize*2 : (gi*GroupSize+n)*2]
		block = [GroupSize]float32{}
		var m uint16
		for i := 0; i < n; i++ {
			h := binary.LittleEndian.Uint16(gs[2*i:])
			m = max(m, h&0x7fff)
			block[i] = f16Table[h]
		}
		if m >= 0x7c00 { // Inf or NaN: the reference decides
			encodeGroupRef(t, &block, r*g+gi)
			continue
		}
		encodeGroup(t, &block, f16Table[m], r*g+gi)
	}
}

// absMaxBits returns max|v| over a group as f32 bits and whether every
// value was finite. Finite non-negative floats order like their bits.
func absMaxBits(b *[GroupSize]float32) (uint32, bool) {
	var m uint32
	for _, v := range b {
		m = max(m, math.Float32bits(v)&0x7fffffff)
	}
	return m, m < 0x7f800000
}

// roundHalfAway rounds an f32 quotient half away from zero; adding 0.5 in
// float64 is exact for the small magnitudes here. Branch-free, because
// the sign of a weight is a coin flip the predictor cannot learn.
func roundHalfAway(x float32) int {
	b := math.Float32bits(x)
	t := int(float64(math.Float32frombits(b&0x7fffffff)) + 0.5)
	sign := int(int32(b) >> 31)
	return (t ^ sign) - sign
}

// q4Scaled quantizes a finite group whose max|v| is amax; it returns the
// f32 scale.
func q4Scaled(b *[GroupSize]float32, amax float32, out []byte) float32 {
	out = out[:16]
	s := amax / 7
	if s == 0 {
		for j := range out {
			out[j] = 0x88
		}
		return 0
	}
	for j := 0; j < 16; j++ {
		lo := uint8(min(15, max(0, roundHalfAway(b[j]/s)+8)))
		hi := uint8(min(15, max(0, roundHalfAway(b[j+16]/s)+8)))
		out[j] = lo | hi<<4
	}
	return s
}

func q8Scaled(b *[GroupSize]float32, amax float32, out []byte) float32 {
	out = out[:32]
	s := amax / 127
	if s == 0 {
		clear(out)
		return 0
	}
	for i, v := range b {
		out[i] = byte(int8(min(127, max(-127, roundHalfAway(v/s)))))
	}
	return s
}

// u16At views the first two bytes of b (little-endian f16 bits, as x86
// loads them) as a *uint16 for the assembly quantizers.
func u16At(b []byte) *uint16 { return (*uint16)(unsafe.Pointer(unsafe.SliceData(b))) }

// rowAsm runs a row kernel over groups [0, n) starting at tile group idx,
// sending groups it refuses (NaN/Inf) to ref(k).
func rowAsm(t *Tile, idx, n int, kernel func(k, n int, sc *uint16, out *byte) int, ref func(k int)) {
	gb := groupBytes(t.Type)
	for k := 0; k < n; {
		k += kernel(k, n-k, u16At(t.Scales[(idx+k)*2:]), &t.Data[(idx+k)*gb])
		if k < n {
			ref(k)
			k++
		}
	}
}

// encodeRowF32Asm is encodeRowF32Go with the AVX2 row kernels; a short
// last group goes through a zero-padded copy.
func encodeRowF32Asm(t *Tile, r int, row []float32) {
	cols := t.Cols
	g, full := Groups(cols), cols/GroupSize
	kern := q8RowF32
	if t.Type == Q4_0 {
		kern = q4RowF32
	}
	ref := func(k int) {
		var b [GroupSize]float32
		copy(b[:], row[k*GroupSize:min(cols, (k+1)*GroupSize)])
		encodeGroupRef(t, &b, r*g+k)
	}
	rowAsm(t, r*g, full, func(k, n int, sc *uint16, out *byte) int {
		return kern(&row[k*GroupSize], n, sc, out)
	}, ref)
	if full < g {
		var pad [GroupSize]float32
		copy(pad[:], row[full*GroupSize:])
		rowAsm(t, r*g+full, 1, func(_, n int, sc *uint16, out *byte) int {
			return kern(&pad[0], n, sc, out)
		}, func(int) { ref(full) })
	}
}

// encodeRowF16Asm is encodeRowF16Go with the F16C/AVX2 row kernels,
// reading the f16 bits in place (a short last group via a zero-padded
// copy).
func encodeRowF16Asm(t *Tile, r int, src []byte) {
	cols := t.Cols
	g, full := Groups(cols), cols/GroupSize
	kern := q8RowF16
	if t.Type == Q4_0 {
		kern = q4RowF16
	}
	ref := func(k int) {
		var b [GroupSize]float32
		for i := k * GroupSize; i < min(cols, (k+1)*GroupSize); i++ {
			b[i-k*GroupSize] = f16Table[binary.LittleEndian.Uint16(src[2*i:])]
		}
		encodeGroupRef(t, &b, r*g+k)
	}
	rowAsm(t, r*g, full, func(k, n int, sc *uint16, out *byte) int {
		return kern(u16At(src[k*GroupSize*2:]), n, sc, out)
	}, ref)
	if full < g {
		var pad [GroupSize]uint16
		for i := full * GroupSize; i < cols; i++ {
			pad[i-full*GroupSize] = binary.LittleEndian.Uint16(src[2*i:])
		}
		rowAsm(t, r*g+full, 1, func(_, n int, sc *uint16, out *byte) int {
			return kern(&pad[0], n, sc, out)
		}, func(int) { ref(full) })
	}
}

package quant

import "math"

// vecPadGroups is how many zero groups follow the last real one. The SIMD
// kernels read activations in blocks of up to eight groups (256 values)
// starting at any group of a tile, so a tile ending at the vector's end may
// read up to seven groups past it; the padding makes those reads land on
// zeros inside the slice instead of past it.
const vecPadGroups = 8

// Vec is an activation vector prepared once per matrix-vector product and
// then read by every tile of that product (Q, K and V of a stripe, gate and
// up). Preparing once is what lets the int8 kernels quantize the activation
// a single time instead of once per tile. A Vec is reused across products
// with Set, which allocates only when the vector grows past its capacity.
//
// A Vec belongs to one Kernel (Kernel.NewVec): Set prepares exactly what
// that path reads, and Dot runs that path.
//
// A prepared Vec is read-only: any number of goroutines may call Dot on it
// concurrently, but Set must not race with them.
type Vec struct {
	k *Kernel
	n int
	x []float32 // n values, zero-padded to (groups+vecPadGroups)·32

	// Filled only when k rounds activations to int8; see quantizeGo for the
	// layouts.
	qhi    int       // groups the int8 views may hold non-zero data in
	q8     []int8    // natural order, one int8 per value
	xl, xh []int8    // per group: its values 0..15, its values 16..31
	dx     []float32 // per group: the activation scale d
	c4     []int32   // per group, 4 lanes: −8·Σ of that lane's 8 q values (Q4 bias)
	c8     []int32   // per group, 8 lanes: −128·Σ of that lane's 4 q values (Q8 bias)
}

// NewVec returns a Vec for the default kernel (DefaultKernel) with room for
// n values; engines use Kernel.NewVec with the kernel they were given.
func NewVec(n int) *Vec { return DefaultKernel().NewVec(n) }

// NewVec returns a Vec prepared for k with room for n values, so Set with
// up to n values never allocates.
func (k *Kernel) NewVec(n int) *Vec {
	v := &Vec{k: k}
	v.grow(n)
	return v
}

// Kernel is the path this Vec is prepared for and Dot runs.
func (v *Vec) Kernel() *Kernel { return v.k }

// Len is the number of values last passed to Set.
func (v *Vec) Len() int { return v.n }

// Floats returns the prepared float values (length Len); callers must not
// modify it.
func (v *Vec) Floats() []float32 { return v.x[:v.n] }

func (v *Vec) grow(n int) {
	g := Groups(n) + vecPadGroups
	if len(v.x) >= g*GroupSize {
		return
	}
	v.x = make([]float32, g*GroupSize)
	v.qhi = 0
	v.q8 = make([]int8, g*GroupSize)
	v.xl = make([]int8, g*GroupSize/2)
	v.xh = make([]int8, g*GroupSize/2)
	v.dx = make([]float32, g)
	v.c4 = make([]int32, g*4)
	v.c8 = make([]int32, g*8)
}

// Set copies x into the vector, zero-pads it, and, when the Vec's kernel
// uses int8 activations, quantizes each 32-value block to int8 with an f32
// scale (d = max|x|/127, q = round(x/d)), so each value is off by at most
// d/2. Set allocates only if len(x) exceeds the capacity so far.
func (v *Vec) Set(x []float32) {
	v.grow(len(x))
	old := v.n
	v.n = len(x)
	copy(v.x, x)
	// Zero what a previous, longer Set left behind; the tail beyond that is
	// zero already.
	clear(v.x[len(x):max(old, len(x))])
	if v.k.int8 {
		v.quantize()
	}
}

// quantize fills the int8 views, in assembly when the path has it: per
// group d = max|x|/127 and q = round-half-even(x/d) in f32, so |x − d·q| ≤
// d/2. A group whose d underflows to 0 (every |x| < 2e-43) quantizes to 0.
func (v *Vec) quantize() {
	g := Groups(v.n)
	if v.k.quantize != nil {
		v.k.quantize(v, g)
	} else {
		v.quantizeGo(g)
	}
	// Groups a previous, longer Set quantized must read as zero again.
	og := max(v.qhi, g)
	v.qhi = g
	clear(v.q8[g*GroupSize : og*GroupSize])
	clear(v.xl[g*16 : og*16])
	clear(v.xh[g*16 : og*16])
	clear(v.dx[g:og])
	clear(v.c4[g*4 : og*4])
	clear(v.c8[g*8 : og*8])
}

// quantizeGo fills the int8 views of the first g groups; the assembly
// version computes exactly the same bytes. Group i's bytes are q8[32i:32i+32]; xl and
// xh split them into halves so a 64-byte load of xl (or xh) lines up with
// the low (or high) nibbles of four consecutive Q4 groups starting at any
// group. c4 and c8 hold, per 32-bit lane of the VNNI accumulators, the bias
// that undoes storing Q4 weights as q+8 (nibbles) and Q8 weights as q+128
// (so vpdpbusd can treat them as unsigned).
func (v *Vec) quantizeGo(g int) {
	for i := 0; i < g; i++ {
		blk := (*[GroupSize]float32)(v.x[i*GroupSize:])
		// max|x| through the bit patterns: with the sign cleared, larger
		// floats have larger patterns (and the kernels need finite x).
		var abits uint32
		for _, f := range blk {
			abits = max(abits, math.Float32bits(f)&0x7fffffff)
		}
		q := (*[GroupSize]int8)(v.q8[i*GroupSize:])
		d := math.Float32frombits(abits) / 127
		v.dx[i] = d
		if d == 0 {
			*q = [GroupSize]int8{}
		} else {
			for j, f := range blk {
				// Adding and removing 1.5·2^23 rounds half to even in f32
				// (|f/d| ≤ 127 up to rounding), as VCVTPS2DQ does.
				r := float32(f/d+0x1.8p23) - 0x1.8p23
				q[j] = int8(max(-127, min(127, r)))
			}
		}
		copy(v.xl[i*16:i*16+16], q[:16])
		copy(v.xh[i*16:i*16+16], q[16:])
		for l := 0; l < 8; l++ {
			v.c8[i*8+l] = -128 * (int32(q[4*l]) + int32(q[4*l+1]) + int32(q[4*l+2]) + int32(q[4*l+3]))
		}
		for l := 0; l < 4; l++ {
			s := int32(0)
			for k := 0; k < 4; k++ {
				s += int32(q[4*l+k]) + int32(q[16+4*l+k])
			}
			v.c4[i*4+l] = -8 * s
		}
	}
}

package convert

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/cflow-dev/cflow/quant"
)

// dtype is the element type of a checkpoint tensor; only the three the
// issue names are accepted.
type dtype uint8

const (
	dtF32 dtype = iota
	dtF16
	dtBF16
	// dtQ8_0 and dtQ4_0 are ggml blocks of 32 weights (a GGUF's quantized
	// tensors, tensor_blocks.go), carried into tiles of the same codec
	// block for block.
	dtQ8_0
	dtQ4_0
)

// size is the bytes per element (about one for the block types: byte
// accounting only).
func (d dtype) size() int {
	switch d {
	case dtF32:
		return 4
	case dtQ8_0, dtQ4_0:
		return 1
	}
	return 2
}

func (d dtype) String() string {
	if int(d) < 5 {
		return [...]string{"F32", "F16", "BF16", "Q8_0", "Q4_0"}[d]
	}
	return fmt.Sprintf("dtype(%d)", uint8(d))
}

// tensor is one weight of the checkpoint as a 2-D row-major view over the
// mapping. 1-D tensors (norms) are one row. rowOf, when set, maps a
// destination row to the stored row: llama2.c's q/k permutation is applied
// on the fly instead of materialising a permuted copy.
type tensor struct {
	name  string
	file  string
	dt    dtype
	shape []int
	rows  int
	cols  int
	data  []byte
	rowOf func(int) int
	// plusOne: the tensor is a Gemma-style norm weight applied as (1 + w);
	// vector returns 1 + w so the runtime's plain norm computes it.
	plusOne bool
	// normShifted: the source stored the norm as 1 + w already (a Gemma
	// GGUF), so plusOne must not be set again.
	normShifted bool
	// foreign: a GGUF tensor of a type cflow does not carry, its data
	// still the blocks until requantForeign dequantizes them (or refuses).
	foreign *foreignBlocks
	// unsupported, when set, says why the tensor cannot be converted
	// (an integer dtype, a 3-D shape); it is an error only if used.
	unsupported string
}

func newTensor(name, file string, dt dtype, shape []int, data []byte) (*tensor, error) {
	t := &tensor{name: name, file: file, dt: dt, shape: shape, data: data}
	switch len(shape) {
	case 1:
		t.rows, t.cols = 1, shape[0]
	case 2:
		t.rows, t.cols = shape[0], shape[1]
	default:
		return nil, fmt.Errorf("%s: tensor %s: shape %v is not 1-D or 2-D", file, name, shape)
	}
	want := t.rows * t.cols * dt.size()
	if dt.blocks() {
		if t.cols%quant.GroupSize != 0 {
			return nil, fmt.Errorf("%s: tensor %s: %s rows of %d weights are not whole blocks", file, name, dt, t.cols)
		}
		want = t.rows * t.cols / quant.GroupSize * dt.blockBytes()
	}
	if len(data) != want {
		return nil, fmt.Errorf("%s: tensor %s: %d data bytes, shape %v of %s needs %d", file, name, len(data), shape, dt, want)
	}
	return t, nil
}

// bytes is the tensor's size in the checkpoint, for throughput accounting.
func (t *tensor) bytes() int64 { return int64(len(t.data)) }

// block converts rows [r0, r0+nr) × cols [c0, c0+nc) to f32 in dst with row
// stride nc.
func (t *tensor) block(dst []float32, r0, nr, c0, nc int) {
	if t.dt.blocks() {
		t.blockFromBlocks(dst, r0, nr, c0, nc)
		return
	}
	es := t.dt.size()
	for i := 0; i < nr; i++ {
		r := r0 + i
		if t.rowOf != nil {
			r = t.rowOf(r)
		}
		src := t.data[(r*t.cols+c0)*es : (r*t.cols+c0+nc)*es]
		out := dst[i*nc : i*nc+nc]
		switch t.dt {
		case dtF32:
			for j := range out {
				out[j] = math.Float32frombits(binary.LittleEndian.Uint32(src[4*j:]))
			}
		case dtF16:
			for j := range out {
				out[j] = quant.F16ToF32(binary.LittleEndian.Uint16(src[2*j:]))
			}
		case dtBF16:
			for j := range out {
				out[j] = math.Float32frombits(uint32(binary.LittleEndian.Uint16(src[2*j:])) << 16)
			}
		}
	}
}

// vector returns a 1-row tensor as f32 (norm weights).
func (t *tensor) vector() []float32 {
	v := make([]float32, t.rows*t.cols)
	t.block(v, 0, t.rows, 0, t.cols)
	if t.plusOne {
		for i := range v {
			v[i]++
		}
	}
	return v
}

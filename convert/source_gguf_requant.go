package convert

import (
	"encoding/binary"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/cflow-dev/cflow/gguf"
	"github.com/cflow-dev/cflow/quant"
)

// ggufRequantable are the GGUF tensor types cflow does not carry but quant
// can dequantize (ggml's dequantize_row_*): Options.Requant dequantizes
// them to f32 and the conversion quantizes them with --quant. Every other
// type (Q2_K, Q3_K, IQ*, MXFP4, …) is refused naming tensor and type.
var ggufRequantable = map[gguf.GGMLType]quant.Type{
	gguf.GGMLQ4_1: quant.Q4_1, gguf.GGMLQ5_0: quant.Q5_0, gguf.GGMLQ5_1: quant.Q5_1,
	gguf.GGMLQ4_K: quant.Q4_K, gguf.GGMLQ5_K: quant.Q5_K, gguf.GGMLQ6_K: quant.Q6_K,
}

// foreignBlocks are a tensor's ggml blocks of a type cflow does not carry,
// held until requantForeign dequantizes them (or refuses them).
type foreignBlocks struct {
	gguf gguf.GGMLType
	typ  quant.Type
	raw  []byte
}

// foreignTensor makes the tensor of a requantable type: an F32 tensor with
// no data yet, its blocks beside it.
func foreignTensor(name, file string, ti *gguf.TensorInfo, qt quant.Type, shape []int, raw []byte) (*tensor, error) {
	t := &tensor{name: name, file: file, dt: dtF32, shape: shape, foreign: &foreignBlocks{gguf: ti.Type, typ: qt, raw: raw}}
	t.rows, t.cols = 1, shape[0]
	if len(shape) == 2 {
		t.rows, t.cols = shape[0], shape[1]
	}
	bw, bb := qt.BlockWeights(), qt.BlockBytes()
	if t.cols%bw != 0 || len(raw) != t.rows*t.cols/bw*bb {
		return nil, fmt.Errorf("%s: tensor %s: %d bytes of %s for shape %v", file, name, len(raw), ti.Type, shape)
	}
	return t, nil
}

// RequantCost is what requantizing one tensor cost: the RMS of the
// difference between its weights as the GGUF stored them and as the
// output's codec stores them, absolute and relative to the weights' RMS.
type RequantCost struct {
	Tensor   string
	From     string // the GGUF's type (ggml's name)
	To       quant.Type
	RMS, Rel float64
}

func (c RequantCost) String() string {
	return fmt.Sprintf("%s %s -> %s: RMS error %.3g (%.2f%% of the weights' RMS)", c.Tensor, c.From, c.To, c.RMS, 100*c.Rel)
}

// requantForeign refuses the tensors of types cflow does not carry, naming
// the first, unless requant asks to dequantize them; then each becomes f32
// (the values llama.cpp computes from the blocks) and its cost is measured
// by quantizing those values with q, ggml's quantizer, which cflow's tile
// codecs are (quant.QuantizeRows). Sorted by name.
func requantForeign(s *source, requant bool, q quant.Type) ([]RequantCost, error) {
	var names []string
	for n, t := range s.tensors {
		if t.foreign != nil {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	if len(names) == 0 {
		return nil, nil
	}
	if !requant {
		t := s.tensors[names[0]]
		return nil, fmt.Errorf("%s: tensor %s is %s, which cflow does not carry (%d such tensors); --requant %s dequantizes and requantizes them, at a cost it reports", s.path, t.name, t.foreign.gguf, len(names), q)
	}
	var costs []RequantCost
	for _, n := range names {
		t := s.tensors[n]
		w := make([]float32, t.rows*t.cols)
		if err := quant.DequantizeRows(t.foreign.typ, w, t.foreign.raw); err != nil {
			return nil, fmt.Errorf("%s: tensor %s: %w", s.path, n, err)
		}
		t.data = make([]byte, 4*len(w))
		for i, x := range w {
			binary.LittleEndian.PutUint32(t.data[4*i:], math.Float32bits(x))
		}
		from := t.foreign.gguf.String()
		t.foreign = nil
		if err := t.checkFinite(); err != nil {
			return nil, err
		}
		c, err := requantCost(w, t.cols, q)
		if err != nil {
			return nil, fmt.Errorf("%s: tensor %s: %w", s.path, n, err)
		}
		c.Tensor, c.From = n, from
		costs = append(costs, c)
	}
	return costs, nil
}

// requantCost quantizes w (rows of cols) with q and measures the error.
func requantCost(w []float32, cols int, q quant.Type) (RequantCost, error) {
	c := RequantCost{To: q}
	if q == quant.F32 {
		return c, nil
	}
	blocks := make([]byte, len(w)/q.BlockWeights()*q.BlockBytes())
	if err := quant.QuantizeRows(q, blocks, w, cols, nil); err != nil {
		return c, err
	}
	back := make([]float32, len(w))
	if err := quant.DequantizeRows(q, back, blocks); err != nil {
		return c, err
	}
	var e, s float64
	for i, x := range w {
		d := float64(back[i] - x)
		e += d * d
		s += float64(x) * float64(x)
	}
	c.RMS = math.Sqrt(e / float64(len(w)))
	if s > 0 {
		c.Rel = math.Sqrt(e / s)
	}
	return c, nil
}

// RequantSummary is the CLI's account of a --requant: the count, the mean
// relative error and the worst tensors.
func RequantSummary(costs []RequantCost) []string {
	if len(costs) == 0 {
		return nil
	}
	byRel := append([]RequantCost(nil), costs...)
	sort.SliceStable(byRel, func(i, j int) bool { return byRel[i].Rel > byRel[j].Rel })
	var mean float64
	for _, c := range costs {
		mean += c.Rel
	}
	mean /= float64(len(costs))
	out := []string{fmt.Sprintf("requantized %d tensors to %s: mean relative RMS error %.2f%%; worst:", len(costs), costs[0].To, 100*mean)}
	for _, c := range byRel[:min(5, len(byRel))] {
		out = append(out, "  "+c.String())
	}
	return out
}

// ggufTypeList names the types a refusal points at.
func ggufTypeList(m map[gguf.GGMLType]quant.Type) string {
	var s []string
	for t := range m {
		s = append(s, t.String())
	}
	sort.Strings(s)
	return strings.Join(s, ", ")
}

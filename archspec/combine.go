package archspec

import "fmt"

// CombineStyle says how a layer's attention, dense FFN and expert outputs
// join the residual. Values 0–2 are the report's; 3–5 name the spec's other
// styles. Stored in GlobalHeader.combine_style. What a style means is stated
// once, by the methods below: the checker, the converter's layout, the plan
// and the runtime ask them instead of comparing against a style, so a new
// style is added here (and in one engine file), not in every package.
type CombineStyle uint8

const (
	ParallelSqrt2     CombineStyle = 0 // gemma4: x_mid + (FFN(h)+MoE(h))/√2
	DelayedSum        CombineStyle = 1 // arch2_4_*: x_mid + f(ℓ−δd) + queued experts
	AsyncExperts      CombineStyle = 2 // arch4: one pre-norm feeds attention, FFN and MoE
	PreNorm           CombineStyle = 3 // llama, mixtral, arch5 (with block iterations)
	DecoupledStreams  CombineStyle = 4 // arch1: attention and FFN streams, merged periodically
	PipelineRegisters CombineStyle = 5 // arch3: FFN reads the previous layer's register
)

var combineNames = [...]string{"ParallelSqrt2", "DelayedSum", "AsyncExperts", "PreNorm", "DecoupledStreams", "PipelineRegisters"}

func (c CombineStyle) String() string {
	if int(c) < len(combineNames) {
		return combineNames[c]
	}
	return fmt.Sprintf("CombineStyle(%d)", uint8(c))
}

// Valid reports whether the runtime knows how to execute c.
func (c CombineStyle) Valid() bool { return int(c) < len(combineNames) }

// Residual names a value of a layer's residual computation that a stream
// reads, in the spec's notation (ARCHITECTURES.md). The runtime maps each to
// one of its buffers; a stream's input is stated by the style, not guessed.
type Residual uint8

const (
	// ResidualIn is x_in(ℓ) = x_out(ℓ−1), the embedding for ℓ = 0
	// (PipelineRegisters: xfm_reg(ℓ−1)).
	ResidualIn Residual = iota
	// ResidualMid is x_mid(ℓ) = x_in(ℓ) + Attn(Na(x_in(ℓ))).
	ResidualMid
	// ResidualDelayed is x_out(ℓ−δd), an earlier layer's finished output
	// (the zero vector before layer 0): DelayedSum's dense FFN input.
	ResidualDelayed
	// StreamAttn is the attention stream s_a (PipelineRegisters: attn_reg)
	// of the two-stream styles.
	StreamAttn
	// StreamFFN is DecoupledStreams' FFN stream s_f.
	StreamFFN
)

// AttentionReads is the value layer ℓ's attention normalizes and reads.
func (c CombineStyle) AttentionReads() Residual {
	switch c {
	case DecoupledStreams, PipelineRegisters:
		return StreamAttn
	}
	return ResidualIn
}

// FFNReads is the value layer ℓ's dense FFN normalizes (with Nf) and reads.
func (c CombineStyle) FFNReads() Residual {
	switch c {
	case DelayedSum:
		return ResidualDelayed
	case AsyncExperts, PipelineRegisters:
		return ResidualIn
	case DecoupledStreams:
		return StreamFFN
	}
	return ResidualMid
}

// RouterReads is the value layer ℓ's router (and its experts) normalize and
// read: the FFN's input, except for styles with their own MoE norm.
func (c CombineStyle) RouterReads() Residual {
	if c.OwnMoENorm() {
		return ResidualMid
	}
	return c.FFNReads()
}

// OwnMoENorm reports styles whose router normalizes its input with its own
// norm Nr (MatMoENorm, moe_norm) instead of sharing the FFN's Nf(·): the
// dense FFN and the experts read different residuals.
func (c CombineStyle) OwnMoENorm() bool { return c == DelayedSum }

// DelaysDense reports styles whose dense FFN reads an earlier layer's
// output: header dense_delay is defined only for them, and must be ≥ 1 when
// the model has a dense FFN.
func (c CombineStyle) DelaysDense() bool { return c == DelayedSum }

// DefersExperts reports styles whose expert output joins a later layer (a
// queue keyed by InjectionLayer): header expert_delay is defined only for
// them, and only they let an expert read overlap the layers in between.
func (c CombineStyle) DefersExperts() bool { return c == DelayedSum || c == AsyncExperts }

// InjectionLayer is the layer whose residual receives the experts routed at
// layer (of layers): layer itself unless the style defers experts.
// DelayedSum adds them to x_out(T), T = min(layer+δe, L−1); AsyncExperts to
// x_in(layer+δe), where T ≥ L means the final residual before the final norm.
func (c CombineStyle) InjectionLayer(layer, expertDelay, layers int) int {
	switch c {
	case DelayedSum:
		return min(layer+expertDelay, layers-1)
	case AsyncExperts:
		return layer + expertDelay
	}
	return layer
}

// IteratesBlocks reports styles for which arch.block_iterations > 1 is
// defined (each unique block runs several passes): the standard pre-norm
// residual only.
func (c CombineStyle) IteratesBlocks() bool { return c == PreNorm }

// MergesStreams reports styles that keep two residual streams and average
// them every arch.merge_interval layers.
func (c CombineStyle) MergesStreams() bool { return c == DecoupledStreams }

// Standard reports the pre-norm residual of llama, Mistral, Qwen and
// Mixtral (x_mid = x + Attn(Na(x)), x_out = x_mid + FFN(Nf(x_mid))): the
// only style another engine (llama.cpp via GGUF) computes.
func (c CombineStyle) Standard() bool { return c == PreNorm }

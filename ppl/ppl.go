// Package ppl measures perplexity and bits per byte of a text under a cflow
// model, by the protocol of issue 10 that golden/train/eval.py follows on
// the PyTorch side:
//
//   - tokenize the text once, without BOS;
//   - split the ids into consecutive chunks of ctx − 1 (the last may be
//     shorter); ctx defaults to the model's maximum, at most 512;
//   - evaluate each chunk as [BOS] + chunk from position 0, predicting
//     every chunk token from its prefix;
//   - loss = mean NLL over all chunk tokens (nats), ppl = exp(loss),
//     bits/byte = total NLL / ln 2 / number of text bytes.
//
// Each chunk is one fresh sequence on one Engine (Reset between chunks).
// NLL is computed in float64 from the engine's f32 logits.
package ppl

import (
	"errors"
	"fmt"
	"math"

	"github.com/cflow-dev/cflow/cflowfmt"
	"github.com/cflow-dev/cflow/cflowfmt/tokmeta"
	"github.com/cflow-dev/cflow/engine"
	"github.com/cflow-dev/cflow/quant"
	"github.com/cflow-dev/cflow/tokenizer"
)

// MaxDefaultCtx caps the default context.
const MaxDefaultCtx = 512

// Result is one evaluation. JSON names are cflowc ppl --json's.
type Result struct {
	PPL         float64 `json:"ppl"`
	BitsPerByte float64 `json:"bits_per_byte"`
	Tokens      int     `json:"tokens"` // chunk tokens scored (BOS excluded)
	Loss        float64 `json:"loss"`   // mean NLL, nats per token
	NLL         float64 `json:"nll"`    // total NLL, nats
	Bytes       int     `json:"bytes"`  // text bytes, the bits/byte denominator
	Ctx         int     `json:"ctx"`
	Chunks      int     `json:"chunks"`
}

// Options configure Text.
type Options struct {
	// Ctx is the evaluation context including BOS; 0 means DefaultCtx.
	Ctx int
	// Threads for the engine; ≤ 0 means every CPU.
	Threads int
	// Progress, when set, is called after each chunk.
	Progress func(doneTokens, totalTokens int)
	// Kernel is the engine's dot kernel; nil is quant.DefaultKernel().
	// verify.Kernel() keeps activations in f32, as the replay references do.
	Kernel *quant.Kernel
}

// DefaultCtx is the model's maximum sequence length, at most MaxDefaultCtx.
func DefaultCtx(h *cflowfmt.Header) int { return min(int(h.MaxSeqLen), MaxDefaultCtx) }

// Tokenize encodes text with the file's tokenizer, without BOS, and
// returns the tokenizer's BOS id (−1 when it has none).
func Tokenize(m *cflowfmt.Model, text []byte) (ids []int, bos int, err error) {
	tk, err := tokmeta.Load(m.Meta, int(m.Header.VocabSize))
	if err != nil {
		if errors.Is(err, tokenizer.ErrNoTokenizer) {
			return nil, -1, fmt.Errorf("%w, so text cannot be tokenized", err)
		}
		return nil, -1, err
	}
	ids, err = tk.Encode(string(text))
	if err != nil {
		return nil, -1, err
	}
	return ids, tk.BOS(), nil
}

// Text tokenizes text with the file's tokenizer and evaluates it.
func Text(m *cflowfmt.Model, text []byte, opt Options) (*Result, error) {
	ids, bos, err := Tokenize(m, text)
	if err != nil {
		return nil, err
	}
	if bos < 0 {
		return nil, errors.New("ppl: the file's tokenizer has no BOS token, which the protocol puts before every chunk")
	}
	ctx := opt.Ctx
	if ctx == 0 {
		ctx = DefaultCtx(&m.Header)
	}
	e, err := engine.New(m, engine.Options{Threads: opt.Threads, Kernel: opt.Kernel})
	if err != nil {
		return nil, err
	}
	defer e.Close()
	return Evaluate(e, ids, bos, ctx, len(text), opt.Progress)
}

// Evaluate scores ids (no BOS) on e by the protocol, with chunks of ctx − 1
// ids each after BOS. textBytes is the bits-per-byte denominator.
func Evaluate(e *engine.Engine, ids []int, bos, ctx, textBytes int, progress func(done, total int)) (*Result, error) {
	if err := checkArgs(e, ids, bos, ctx, textBytes); err != nil {
		return nil, err
	}
	n := ctx - 1
	r := &Result{Ctx: ctx, Bytes: textBytes}
	for start := 0; start < len(ids); start += n {
		chunk := ids[start:min(start+n, len(ids))]
		err := scoreChunk(e, bos, chunk, func(i int, logits []float32) { r.NLL += NLL(logits, chunk[i]) })
		if err != nil {
			return nil, fmt.Errorf("ppl: chunk at token %d: %w", start, err)
		}
		r.Tokens += len(chunk)
		r.Chunks++
		if progress != nil {
			progress(r.Tokens, len(ids))
		}
	}
	r.Loss = r.NLL / float64(r.Tokens)
	r.PPL = math.Exp(r.Loss)
	r.BitsPerByte = r.NLL / math.Ln2 / float64(textBytes)
	return r, nil
}

// NLL is −log softmax(logits)[target], in float64.
func NLL(logits []float32, target int) float64 {
	mx := math.Inf(-1)
	for _, z := range logits {
		mx = math.Max(mx, float64(z))
	}
	var s float64
	for _, z := range logits {
		s += math.Exp(float64(z) - mx)
	}
	return mx + math.Log(s) - float64(logits[target])
}

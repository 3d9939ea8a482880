package ppl

import (
	"errors"
	"fmt"
	"math"

	"github.com/cflow-dev/cflow/engine"
)

// Comparison is `cflowc ppl FILE --kl-base BASE`: the same chunks scored
// under the file and under the base (normally the F32 file of the same
// checkpoint), as llama.cpp's `llama-perplexity --kl-divergence` reports
// them (TRACE.md, "Quantization quality"). JSON names are ppl --json's.
type Comparison struct {
	PPL     float64 `json:"ppl"`      // the file's perplexity
	BasePPL float64 `json:"base_ppl"` // the base's perplexity on the same chunks
	// PPLRatio is PPL / BasePPL.
	PPLRatio float64 `json:"ppl_ratio"`
	// MeanKLD is the mean over scored positions of KL(base ‖ file) of the
	// next-token distributions, in nats.
	MeanKLD float64 `json:"mean_kld"`
	// MaxKLD is the largest per-position KL, for spotting outliers.
	MaxKLD float64 `json:"max_kld"`
	// SameTop is the fraction (0..1) of positions where both put their
	// largest logit on the same token (ties: lower id).
	SameTop     float64 `json:"same_top"`
	BitsPerByte float64 `json:"bits_per_byte"`
	BaseBPB     float64 `json:"base_bits_per_byte"`
	Tokens      int     `json:"tokens"`
	Bytes       int     `json:"bytes"`
	Ctx         int     `json:"ctx"`
	Chunks      int     `json:"chunks"`
}

// Compare scores ids (no BOS) on file and on base by the protocol (chunks
// of ctx − 1 after BOS, both engines reset per chunk) and compares their
// next-token distributions position by position. Both engines must share
// the vocabulary.
func Compare(file, base *engine.Engine, ids []int, bos, ctx, textBytes int, progress func(done, total int)) (*Comparison, error) {
	if vf, vb := file.Header().VocabSize, base.Header().VocabSize; vf != vb {
		return nil, fmt.Errorf("ppl: the file's vocabulary has %d tokens, the base's %d", vf, vb)
	}
	if err := checkArgs(file, ids, bos, ctx, textBytes); err != nil {
		return nil, err
	}
	if ctx > int(base.Header().MaxSeqLen) {
		return nil, fmt.Errorf("ppl: ctx %d exceeds the base's maximum sequence length %d", ctx, base.Header().MaxSeqLen)
	}
	V := int(file.Header().VocabSize)
	n := ctx - 1
	c := &Comparison{Ctx: ctx, Bytes: textBytes}
	var nll, baseNLL, kld float64
	var same int
	// The base's log-probabilities of one chunk, position-major.
	baseLP := make([]float64, n*V)
	baseTop := make([]int, n)
	lf := make([]float64, V)
	for start := 0; start < len(ids); start += n {
		chunk := ids[start:min(start+n, len(ids))]
		err := scoreChunk(base, bos, chunk, func(i int, logits []float32) {
			logSoftmax(baseLP[i*V:(i+1)*V], logits)
			baseTop[i] = argmax32(logits)
		})
		if err != nil {
			return nil, fmt.Errorf("ppl: base, chunk at token %d: %w", start, err)
		}
		err = scoreChunk(file, bos, chunk, func(i int, logits []float32) {
			lb := baseLP[i*V : (i+1)*V]
			k := klFrom(lb, logits, lf)
			nll += -lf[chunk[i]]
			baseNLL += -lb[chunk[i]]
			kld += k
			c.MaxKLD = max(c.MaxKLD, k)
			if baseTop[i] == argmax32(logits) {
				same++
			}
		})
		if err != nil {
			return nil, fmt.Errorf("ppl: chunk at token %d: %w", start, err)
		}
		c.Tokens += len(chunk)
		c.Chunks++
		if progress != nil {
			progress(c.Tokens, len(ids))
		}
	}
	T := float64(c.Tokens)
	c.PPL, c.BasePPL = math.Exp(nll/T), math.Exp(baseNLL/T)
	c.PPLRatio = c.PPL / c.BasePPL
	c.MeanKLD = kld / T
	c.SameTop = float64(same) / T
	c.BitsPerByte = nll / math.Ln2 / float64(textBytes)
	c.BaseBPB = baseNLL / math.Ln2 / float64(textBytes)
	return c, nil
}

// checkArgs refuses what Evaluate and Compare cannot score, before any
// decoding.
func checkArgs(e *engine.Engine, ids []int, bos, ctx, textBytes int) error {
	h := e.Header()
	V := int(h.VocabSize)
	switch {
	case len(ids) == 0:
		return errors.New("ppl: the text has no tokens")
	case textBytes <= 0:
		return errors.New("ppl: the text has no bytes")
	case ctx < 2:
		return fmt.Errorf("ppl: ctx %d leaves no room for a token after BOS (need ≥ 2)", ctx)
	case ctx > int(h.MaxSeqLen):
		return fmt.Errorf("ppl: ctx %d exceeds the model's maximum sequence length %d", ctx, h.MaxSeqLen)
	case bos < 0 || bos >= V:
		return fmt.Errorf("ppl: BOS %d outside the vocabulary of %d", bos, V)
	}
	for i, id := range ids {
		if id < 0 || id >= V {
			return fmt.Errorf("ppl: token %d (at %d) outside the vocabulary of %d", id, i, V)
		}
	}
	return nil
}

// scoreChunk runs [BOS] + chunk[:len−1] from an empty cache as one batched
// prefill and hands fn the logits predicting chunk[i], for every i in
// order. The logits slice is only valid during the call.
func scoreChunk(e *engine.Engine, bos int, chunk []int, fn func(i int, logits []float32)) error {
	e.Reset()
	in := make([]int, len(chunk))
	in[0] = bos
	copy(in[1:], chunk[:len(chunk)-1])
	return e.PrefillEach(in, func(i int, logits []float32, _ *engine.Observation) error {
		fn(i, logits)
		return nil
	})
}

// logSoftmax writes log softmax(z) into dst, in float64.
func logSoftmax(dst []float64, z []float32) {
	mx := math.Inf(-1)
	for _, v := range z {
		mx = math.Max(mx, float64(v))
	}
	var s float64
	for _, v := range z {
		s += math.Exp(float64(v) - mx)
	}
	lse := mx + math.Log(s)
	for i, v := range z {
		dst[i] = float64(v) - lse
	}
}

// klFrom returns KL(p ‖ q) = Σ p·(log p − log q) for the base's log-probs
// lb and the file's logits z, leaving the file's log-probs in lf.
func klFrom(lb []float64, z []float32, lf []float64) float64 {
	logSoftmax(lf, z)
	var k float64
	for i, l := range lb {
		if p := math.Exp(l); p > 0 {
			k += p * (l - lf[i])
		}
	}
	return max(k, 0)
}

// argmax32 is the index of the largest logit, ties to the lower index.
func argmax32(z []float32) int {
	best := 0
	for i, v := range z {
		if v > z[best] {
			best = i
		}
	}
	return best
}

package engine

import (
	"encoding/binary"
	"unsafe"

	"github.com/cflow-dev/cflow/quant"
)

// tileCache reports whether the cache's float32s can be viewed as F32
// tiles, whose bytes are little-endian; elsewhere heads loops in Go.
var tileCache = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// headScratch is one attention head's scratch: its query and probability
// vectors prepared for the F32 tile kernels, and its scores.
type headScratch struct {
	q, p   *actVec
	scores []float32
	probs  []float32
}

// heads runs every query head of one pass at position n−1 over the cached
// positions [start, n): scores Q·K on the keys' F32 tiles (one per cache
// block: positions × head dim), a float32 softmax (quant.ExpScores, the
// sum in float64), and the weighted sum of
// values on their transposed tiles (head dim × positions). The tile
// kernels are the SIMD ones every matvec uses; per head the sums run in a
// fixed order whatever the thread count or batch. Paths with a
// multi-vector F32 kernel run headGroups, which computes the same bits
// several heads at a time; elsewhere headsEach runs. Heads with a head dim
// wider than a tile take a Go loop for the scores (and big-endian
// machines for both products).
func (w *worker) heads(c *kvCache, lp *layerPlan, q, att []float32, n, start int) {
	if c.kt != KVF32 || c.vt != KVF32 || tileCache && lp.hd <= quant.MaxTileCols && w.kernel.HasF32Rows() {
		w.headGroups(c, lp, q, att, n, start)
		return
	}
	w.headsEach(c, lp, q, att, n, start)
}

// headsEach is heads one query head per item, on the single-vector tile
// kernels: the path of kernels without a multi-vector F32 kernel, and the
// truth headGroups is tested against.
func (w *worker) headsEach(c *kvCache, lp *layerPlan, q, att []float32, n, start int) {
	b := &w.bf
	H, Hkv, hd := int(w.h.NumHeads), lp.kvHeads, lp.hd
	scale := float32(w.attnScale(hd))
	b0, nb := start/kvBlock, (n+kvBlock-1)/kvBlock
	span := nb * kvBlock
	for len(b.heads) < H {
		// F32 tiles read the float values only: vectors of the engine's
		// float twin skip the int8 rounding Set would do on an int8 path.
		f := w.kernel.Float()
		b.heads = append(b.heads, headScratch{q: &actVec{v: f.NewVec(hd)}, p: &actVec{v: f.NewVec(kvBlock)}})
	}
	w.parallel(H, Hkv, func(j int) {
		kvh := j * Hkv / H
		hs := &b.heads[j]
		if cap(hs.scores) < span {
			hs.scores = make([]float32, span, 2*span)
			hs.probs = make([]float32, span, 2*span)
		}
		sc, p := hs.scores[:span], hs.probs[:span]
		qh := q[j*hd : (j+1)*hd]
		if hd <= quant.MaxTileCols && tileCache {
			hs.q.set(qh)
			clear(sc[b0*kvBlock : n])
			for blk := b0; blk < nb; blk++ {
				lo := blk * kvBlock
				rows := min(n, lo+kvBlock) - lo
				kt := f32Tile(c.k[blk][kvh*kvBlock*hd:], rows, hd)
				dotTile(&kt, hs.q, 0, sc[lo:])
			}
		} else {
			for t := start; t < n; t++ {
				blk, i := t/kvBlock, t%kvBlock
				kr := c.k[blk][(kvh*kvBlock+i)*hd : (kvh*kvBlock+i+1)*hd]
				var dot float32
				for i, qv := range qh {
					dot += qv * kr[i]
				}
				sc[t] = dot
			}
		}
		inv := softmaxRow(sc, p, b0*kvBlock, start, n, scale)
		oh := att[j*hd : (j+1)*hd]
		clear(oh)
		if tileCache {
			hs.p.set(p)
			for blk := b0; blk < nb; blk++ {
				for r0 := 0; r0 < hd; r0 += quant.MaxTileRows {
					rows := min(quant.MaxTileRows, hd-r0)
					vt := f32Tile(c.v[blk][(kvh*hd+r0)*kvBlock:], rows, kvBlock)
					dotTile(&vt, hs.p, blk*kvBlock, oh[r0:])
				}
			}
		} else {
			for t := start; t < n; t++ {
				vb := c.v[t/kvBlock][kvh*hd*kvBlock+t%kvBlock:]
				for i := range oh {
					oh[i] += p[t] * vb[i*kvBlock]
				}
			}
		}
		for i := range oh {
			oh[i] *= inv
		}
	})
}

// f32Tile views rows×cols float32 values (row-major, little-endian like
// every platform Go's assembly kernels run on) as an F32 tile.
func f32Tile(f []float32, rows, cols int) quant.Tile {
	return quant.Tile{Type: quant.F32, Rows: rows, Cols: cols,
		Data: unsafe.Slice((*byte)(unsafe.Pointer(&f[0])), rows*cols*4)}
}

// softmaxRow leaves e^(s·scale − max) of the live scores sc[start:n] in
// p[start:n] (float32, 8 at a time where the CPU has AVX2, bit for bit the
// scalar loop: quant.TestExpScores), zeroes p outside them from lo on, and
// returns 1 / Σ (summed in float64). The lone-head and grouped-head loops
// share it so both normalise a head's weights the same way, to the bit.
func softmaxRow(sc, p []float32, lo, start, n int, scale float32) float32 {
	clear(p[lo:start])
	quant.ExpScores(sc[start:n], scale, p[start:n])
	var sum float64
	for _, v := range p[start:n] {
		sum += float64(v)
	}
	clear(p[n:])
	return float32(1 / sum)
}

package engine

import (
	"encoding/binary"

	"github.com/cflow-dev/cflow/quant"
)

// runKV is item it of headGroups when the pass's cache is not all f32: the
// same qpi query heads of one KV head, the same softmax and scaling, with
// each product read from the cache's own storage. f16 keys and values run
// quant.DotF16Rows (F16C widening, every query head of the item per call);
// q8_0 keys are Q8_0 tiles under quant.Dot on the engine's path, so an int8
// path quantizes the query per 32 as it does the weights' activations
// (VPMADDUBSW on avx2i8, VNNI) and a float path widens the keys — the
// query's rounding is then the weights' own, a bounded part of
// docs/TRACE.md's q8_0 rule, and the dot runs on the fastest kernel the
// engine has; q8_0 values run quant.AccumQ8Rows over the block's live
// positions. f32 halves of a mixed cache run headGroups' own calls.
// Nothing here allocates once the scratch has grown.
func (j *groupsJob) runKV(it int) {
	b, k := &j.w.bf, j.w.kernel
	c, q, att, n, start := j.c, j.q, j.att, j.n, j.start
	G, qpi, hd, b0, nb, span, scale := j.G, j.qpi, j.hd, j.b0, j.nb, j.span, j.scale
	j0 := it * qpi
	kvh := j0 / G
	gs := &b.headGroups[it]
	if cap(gs.scores) < qpi*span {
		gs.scores = make([]float32, qpi*span, 2*qpi*span)
		gs.probs = make([]float32, qpi*span, 2*qpi*span)
	}
	sc, p := gs.scores[:qpi*span], gs.probs[:qpi*span]
	for g := range qpi {
		clear(sc[g*span+b0*kvBlock : g*span+n])
	}
	ng := quant.Groups(hd)
	if c.kt == KVQ8_0 {
		for len(gs.qv) < qpi {
			gs.qv = append(gs.qv, k.NewVec(hd))
		}
		for g := range qpi {
			gs.qv[g].Set(q[(j0+g)*hd : (j0+g+1)*hd])
		}
	}
	for blk := b0; blk < nb; blk++ {
		lo := blk * kvBlock
		rows := min(n, lo+kvBlock) - lo
		switch c.kt {
		case KVF32:
			dotF32Rows(k, c.k[blk][kvh*kvBlock*hd:], rows, hd, hd, q[j0*hd:], hd, qpi, sc[lo:], span)
		case KVF16:
			k.DotF16Rows(c.k16[blk][kvh*kvBlock*hd:], rows, hd, hd, q[j0*hd:], hd, qpi, sc[lo:], span)
		case KVQ8_0:
			r0 := kvh * kvBlock
			sb, db := c.ks[blk][r0*ng*2:(r0+rows)*ng*2], c.kq[blk][r0*ng*32:(r0+rows)*ng*32]
			for g := range qpi {
				if hd <= quant.MaxTileCols {
					gs.kt = quant.Tile{Type: quant.Q8_0, Rows: rows, Cols: hd, Scales: sb, Data: db}
					quant.Dot(&gs.kt, gs.qv[g], 0, sc[g*span+lo:])
				} else {
					q8ScoresGo(sb, db, rows, hd, q[(j0+g)*hd:(j0+g+1)*hd], sc[g*span+lo:])
				}
			}
		}
	}
	var inv [maxHeadsPerGroup]float32
	for g := range qpi {
		sg, pg := sc[g*span:(g+1)*span], p[g*span:(g+1)*span]
		inv[g] = softmaxRow(sg, pg, b0*kvBlock, start, n, scale)
	}
	oh := att[j0*hd : (j0+qpi)*hd]
	clear(oh)
	for blk := b0; blk < nb; blk++ {
		lo := blk * kvBlock
		cols := min(kvBlock, (n-lo+7)&^7)
		switch c.vt {
		case KVF32:
			dotF32Rows(k, c.v[blk][kvh*hd*kvBlock:], hd, cols, kvBlock, p[lo:], span, qpi, oh, hd)
		case KVF16:
			k.DotF16Rows(c.v16[blk][kvh*hd*kvBlock:], hd, cols, kvBlock, p[lo:], span, qpi, oh, hd)
		case KVQ8_0:
			rows, r0 := min(n, lo+kvBlock)-lo, kvh*kvBlock
			k.AccumQ8Rows(c.vs[blk][r0*ng*2:], c.vq[blk][r0*ng*32:], rows, hd, p[lo:], span, qpi, oh, hd)
		}
	}
	for g := range qpi {
		for i := range oh[g*hd : (g+1)*hd] {
			oh[g*hd+i] *= inv[g]
		}
	}
}

// dotF32Rows is quant's DotF32Rows where path k has the kernel, else the
// same sums in a Go loop (the scalar path's f32 half of a mixed cache).
func dotF32Rows(k *quant.Kernel, w []float32, rows, cols, wstride int, x []float32, xstride, nx int, y []float32, ystride int) {
	if k.HasF32Rows() {
		k.DotF32Rows(w, rows, cols, wstride, x, xstride, nx, y, ystride)
		return
	}
	for g := range nx {
		for r := range rows {
			var acc float32
			for c, xv := range x[g*xstride : g*xstride+cols] {
				acc += w[r*wstride+c] * xv
			}
			y[g*ystride+r] += acc
		}
	}
}

// q8ScoresGo is the q8_0 keys' scores for a head dim wider than a tile
// (no Q8_0 tile holds it): y[r] += Σ_c key_r[c]·q[c], dequantized per group.
func q8ScoresGo(scales, data []byte, rows, hd int, q, y []float32) {
	ng := quant.Groups(hd)
	for r := range rows {
		var acc float32
		for j := range ng {
			d := quant.F16ToF32(binary.LittleEndian.Uint16(scales[(r*ng+j)*2:]))
			var s float32
			for i := range min(quant.GroupSize, hd-j*quant.GroupSize) {
				s += float32(int8(data[(r*ng+j)*32+i])) * q[j*quant.GroupSize+i]
			}
			acc += d * s
		}
		y[r] += acc
	}
}

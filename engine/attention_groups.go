package engine

import "github.com/cflow-dev/cflow/quant"

// maxHeadsPerGroup is how many query heads of one KV head an attention
// item serves at once: each row of that KV head's key and value tiles is
// read from L2 once for all of them (quant.DotF32Rows) instead of once
// per head, and the KV heads still split into enough items to spread over
// the pool in a decode step.
const maxHeadsPerGroup = 4

// groupScratch is one attention item's scratch: the scores and
// probabilities of its query heads, span apart.
type groupScratch struct {
	scores, probs []float32
	qv            []*quant.Vec // q8_0 keys: the query heads prepared for Dot
	kt            quant.Tile   // q8_0 keys: the block's tile (here, not on the heap per call)
}

// headsPerGroup is the largest divisor k of the query heads per KV head g
// that is at most maxHeadsPerGroup and leaves at least minItems items
// (h/k, h query heads) — a decode step's heads are its only parallel
// attention work, so on a wide pool an MQA model's few KV heads must not
// leave threads idle. The grouping changes no bit of any head's output.
func headsPerGroup(h, g, minItems int) int {
	for k := min(g, maxHeadsPerGroup); k > 1; k-- {
		if g%k == 0 && h/k >= minItems {
			return k
		}
	}
	return 1
}

// headGroups is heads on paths with a multi-vector F32 kernel: an item is
// qpi query heads of one KV head, whose products with each key and value
// tile run in one quant.DotF32Rows call. Every head's sums, softmax and
// scaling are heads' own, in heads' order (DotF32Rows keeps Dot's order
// per vector), so a head's output is bit-identical to heads' — and, as in
// heads, identical in a decode step and in a batched prefill column.
// The value tile of the last block is multiplied over its live positions
// rounded up to 8 (one SIMD chunk) instead of all kvBlock: the positions
// cut had probability zero and finite values (kvCache.forget), and adding
// a zero product leaves the kernel's nonzero-or-+0 accumulators as they
// are, so the cut changes no bit.
func (w *worker) headGroups(c *kvCache, lp *layerPlan, q, att []float32, n, start int) {
	b := &w.bf
	H, Hkv, hd := int(w.h.NumHeads), lp.kvHeads, lp.hd
	G := H / Hkv
	qpi := headsPerGroup(H, G, w.minItems)
	items := H / qpi
	nb := (n + kvBlock - 1) / kvBlock
	for len(b.headGroups) < items {
		b.headGroups = append(b.headGroups, groupScratch{})
	}
	*w.gj = groupsJob{w: w, c: c, q: q, att: att, n: n, start: start, G: G, qpi: qpi, hd: hd,
		b0: start / kvBlock, nb: nb, span: nb * kvBlock, scale: float32(w.attnScale(hd)), item: w.gj.item, kvItem: w.gj.kvItem}
	item := w.gj.item
	if c.kt != KVF32 || c.vt != KVF32 {
		item = w.gj.kvItem // attention_kv.go
	}
	w.parallel(items, Hkv, item)
	w.gj.c, w.gj.q, w.gj.att = nil, nil, nil
}

// groupsJob holds the operands of the attention loop an engine (or a
// batch column's view of it) is running; item, bound once when the engine
// or column is built, is the loop body over them, so a decode step's
// attention allocates no closure.
type groupsJob struct {
	w                                  *worker
	c                                  *kvCache
	q, att                             []float32
	n, start, G, qpi, hd, b0, nb, span int
	scale                              float32
	item, kvItem                       func(it int)
}

func newGroupsJob(w *worker) *groupsJob {
	j := &groupsJob{w: w}
	j.item, j.kvItem = j.run, j.runKV
	return j
}

// run is item it of headGroups: qpi query heads of one KV head.
func (j *groupsJob) run(it int) {
	b, k := &j.w.bf, j.w.kernel
	c, q, att, n, start := j.c, j.q, j.att, j.n, j.start
	G, qpi, hd, b0, nb, span, scale := j.G, j.qpi, j.hd, j.b0, j.nb, j.span, j.scale
	j0 := it * qpi // first query head; all qpi share KV head j0/G
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
	for blk := b0; blk < nb; blk++ {
		lo := blk * kvBlock
		rows := min(n, lo+kvBlock) - lo
		k.DotF32Rows(c.k[blk][kvh*kvBlock*hd:], rows, hd, hd, q[j0*hd:], hd, qpi, sc[lo:], span)
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
		k.DotF32Rows(c.v[blk][kvh*hd*kvBlock:], hd, cols, kvBlock, p[lo:], span, qpi, oh, hd)
	}
	for g := range qpi {
		for i := range oh[g*hd : (g+1)*hd] {
			oh[g*hd+i] *= inv[g]
		}
	}
}

package engine

import (
	"github.com/cflow-dev/cflow/archspec"
	"github.com/cflow-dev/cflow/quant"
)

// seq is a token's state as a worker runs it: the position and KV caches
// (one per pass) of the sequence it is bound to, and the scheduler's
// per-token values — the residual(s), the open pass's attention/FFN/MoE
// outputs, the ring of delayed dense outputs and the expert queue keyed by
// target layer. A Sequence's own seq holds only its position and caches.
// Everything else (the plans, the scratch buffers, the pool) is the
// worker's or the engine's; the combine styles and attention read and
// write only the seq they are handed.
type seq struct {
	pos int
	kv  []kvCache

	x, xmid, h, m, f, e []float32
	sA, sF              []float32 // two-stream styles: s_a (attn_reg), s_f
	hasF, hasE, hasH    bool
	open                int // pass whose attention ran and is not yet combined; −1 none
	ring                [][]float32
	queue               []queued
	free                [][]float32
}

// queued is an expert output waiting for its target layer.
type queued struct {
	target int
	v      []float32
	job    *stagedJob // expertio.Direct: computed into v at injection
}

// kvBlock is the number of positions one KV-cache block holds. Inside a
// block, keys are head-major ([head][pos][head dim]) and values transposed
// ([head][head dim][pos]), so one head's keys in a block form an F32 tile
// (positions × head dim) and its values another (head dim × positions):
// attention's two products run on the same SIMD tile kernels as the
// weights (attention_heads.go). 128 is a tile's maximum row count.
const kvBlock = 128

// kvCache holds one pass's keys and values in blocks of kvBlock positions,
// allocated as the sequence grows and kept across Reset, in the storage
// its types name (kvtype.go): f32 and f16 keep the layouts above (f16 as
// IEEE halves, read by quant.DotF16Rows); q8_0 keys are one Q8_0 tile per
// head and block (positions × head dim: quant.Dot), q8_0 values the same
// position-major tile (quant.AccumQ8Rows adds its rows times the
// probabilities), since a Q8_0 group must be quantized whole and a
// position's values arrive one position at a time.
type kvCache struct {
	heads, hd int
	kt, vt    KVType
	k, v      [][]float32 // f32: per block, heads·kvBlock·hd values each
	k16, v16  [][]uint16  // f16: the same layouts
	kq, vq    [][]byte    // q8_0: per block heads·kvBlock·G groups of 32 int8 (G = Groups(hd))
	ks, vs    [][]byte    // q8_0: per block heads·kvBlock·G f16 scales
}

// blocks is the number of allocated blocks.
func (c *kvCache) blocks() int {
	switch c.kt {
	case KVF16:
		return len(c.k16)
	case KVQ8_0:
		return len(c.kq)
	}
	return len(c.k)
}

// store writes position pos's keys and values (heads·hd each). Writing by
// position lets the columns of a batched prefill, which share one cache,
// store in any order.
func (c *kvCache) store(pos int, k, v []float32) {
	c.reserve(pos)
	blk, t := pos/kvBlock, pos%kvBlock
	hd, G := c.hd, quant.Groups(c.hd)
	for h := range c.heads {
		kh, vh := k[h*hd:(h+1)*hd], v[h*hd:(h+1)*hd]
		row := h*kvBlock + t
		switch c.kt {
		case KVF32:
			copy(c.k[blk][row*hd:(row+1)*hd], kh)
		case KVF16:
			for i, x := range kh {
				c.k16[blk][row*hd+i] = quant.F32ToF16(x)
			}
		case KVQ8_0:
			quant.QuantizeQ8Row(kh, c.ks[blk][row*G*2:(row+1)*G*2], c.kq[blk][row*G*32:(row+1)*G*32])
		}
		switch c.vt {
		case KVF32:
			vt := c.v[blk][h*hd*kvBlock : (h+1)*hd*kvBlock]
			for i, x := range vh {
				vt[i*kvBlock+t] = x
			}
		case KVF16:
			vt := c.v16[blk][h*hd*kvBlock : (h+1)*hd*kvBlock]
			for i, x := range vh {
				vt[i*kvBlock+t] = quant.F32ToF16(x)
			}
		case KVQ8_0:
			quant.QuantizeQ8Row(vh, c.vs[blk][row*G*2:(row+1)*G*2], c.vq[blk][row*G*32:(row+1)*G*32])
		}
	}
}

// reserve allocates the blocks through position pos. A batch reserves its
// columns' positions before they run concurrently, so their stores only
// write, never grow, a cache they share.
func (c *kvCache) reserve(pos int) {
	n, G := c.heads*kvBlock*c.hd, quant.Groups(c.hd)
	for blk := pos / kvBlock; c.blocks() <= blk; {
		switch c.kt {
		case KVF32:
			c.k = append(c.k, make([]float32, n))
		case KVF16:
			c.k16 = append(c.k16, make([]uint16, n))
		case KVQ8_0:
			c.kq = append(c.kq, make([]byte, c.heads*kvBlock*G*32))
			c.ks = append(c.ks, make([]byte, c.heads*kvBlock*G*2))
		}
		switch c.vt {
		case KVF32:
			c.v = append(c.v, make([]float32, n))
		case KVF16:
			c.v16 = append(c.v16, make([]uint16, n))
		case KVQ8_0:
			c.vq = append(c.vq, make([]byte, c.heads*kvBlock*G*32))
			c.vs = append(c.vs, make([]byte, c.heads*kvBlock*G*2))
		}
	}
}

// forget zeroes every value from position pos on: the f32 and f16 value
// tiles are multiplied over whole blocks (by zero probabilities past the
// last position), so what lies there must be finite, whatever an earlier,
// longer sequence left. (q8_0 values are read over live positions only;
// they are zeroed too, so no stale position is ever read.)
func (c *kvCache) forget(pos int) {
	blk, t := pos/kvBlock, pos%kvBlock
	G := quant.Groups(c.hd)
	for b := blk; b < c.blocks(); b++ {
		if b > blk {
			t = 0
		}
		switch c.vt {
		case KVF32:
			for r := range c.heads * c.hd {
				clear(c.v[b][r*kvBlock+t : (r+1)*kvBlock])
			}
		case KVF16:
			for r := range c.heads * c.hd {
				clear(c.v16[b][r*kvBlock+t : (r+1)*kvBlock])
			}
		case KVQ8_0:
			for h := range c.heads {
				lo, hi := h*kvBlock+t, (h+1)*kvBlock
				clear(c.vq[b][lo*G*32 : hi*G*32])
				clear(c.vs[b][lo*G*2 : hi*G*2])
			}
		}
	}
}

// release drops every block (Sequence.Release).
func (c *kvCache) release() {
	c.k, c.v, c.k16, c.v16, c.kq, c.vq, c.ks, c.vs = nil, nil, nil, nil, nil, nil, nil, nil
}

// bytes is the memory the allocated blocks hold.
func (c *kvCache) bytes() int64 {
	return int64(c.blocks()) * int64(c.heads*kvBlock) * int64(c.kt.rowBytes(c.hd)+c.vt.rowBytes(c.hd))
}

// newSeq allocates a token's scheduler state for this engine's geometry
// (a worker's; its KV cache is bound per token).
func (e *Engine) newSeq() seq {
	d := e.d
	f32 := func(n int) []float32 { return make([]float32, n) }
	s := seq{x: f32(d), xmid: f32(d), h: f32(d), m: f32(d), f: f32(d), e: f32(d),
		sA: f32(d), sF: f32(d), open: -1}
	s.ring = make([][]float32, max(int(e.h.DenseDelay), int(e.h.ExpertDelay))+1)
	for i := range s.ring {
		s.ring[i] = f32(d)
	}
	return s
}

// newKV makes a sequence's empty KV caches, one per pass, for this
// engine's geometry; blocks are allocated as the sequence grows.
func (e *Engine) newKV() []kvCache {
	kv := make([]kvCache, e.passes)
	for p := range kv {
		lp := e.layers[p/e.iters]
		kv[p].heads, kv[p].hd = lp.kvHeads, lp.hd
		kv[p].kt, kv[p].vt = e.cacheK, e.cacheV
	}
	return kv
}

// residual is the buffer holding value r of the open pass.
// ResidualDelayed is x_out(ℓ−δd), in x once that layer is combined.
func (s *seq) residual(r archspec.Residual) []float32 {
	switch r {
	case archspec.ResidualMid:
		return s.xmid
	case archspec.StreamAttn:
		return s.sA
	case archspec.StreamFFN:
		return s.sF
	}
	return s.x
}

// truncate forgets every position from pos on (a failed token's keys).
func (s *seq) truncate(pos int) {
	for p := range s.kv {
		s.kv[p].forget(pos)
	}
}

// startToken clears what a token that failed left in the queue and starts
// both streams from the embedding in x.
func (w *worker) startToken(s *seq) {
	for _, q := range s.queue {
		w.dropStaged(q.job)
		s.free = append(s.free, q.v)
	}
	s.queue, s.open = s.queue[:0], -1
	copy(s.sA, s.x)
	copy(s.sF, s.x)
}

// enqueue copies v into s's expert queue for target layer t.
func (w *worker) enqueue(s *seq, t int, v []float32) {
	var buf []float32
	if n := len(s.free); n > 0 {
		buf, s.free = s.free[n-1], s.free[:n-1]
	} else {
		buf = make([]float32, w.d)
	}
	copy(buf, v)
	s.queue = append(s.queue, queued{target: t, v: buf, job: w.takeStaged()})
}

// inject adds every queued output whose target is ≤ t to s.x, in the order
// they were queued, and drops them from the queue.
func (w *worker) inject(s *seq, t int) {
	keep := s.queue[:0]
	for _, q := range s.queue {
		if q.target <= t {
			if q.job != nil {
				w.finishStaged(q.job, q.v)
			}
			addTo(s.x, q.v)
			s.free = append(s.free, q.v)
		} else {
			keep = append(keep, q)
		}
	}
	s.queue = keep
}

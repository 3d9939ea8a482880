package engine

import (
	"github.com/cflow-dev/cflow/archspec"
	"github.com/cflow-dev/cflow/cflowfmt"
)

// Two tile streams per thread. At one core the decode kernel's DRAM stream
// is bounded by how many misses it keeps in flight while it computes, not
// by the bus; walking two parts of a matrix far apart in the file at once,
// block by block in turn (dotPair), keeps more of them in flight
// (docs/PERFORMANCE.md, log at 0382674, "Session 9: two tile streams per
// thread"). So on a path with a two-stream kernel a Q4_0 matvec's work
// item i is the pair of stripes i and i+h, h = ⌈n/2⌉: a thread's
// contiguous range of items
// (engine/pool/ranges.go) is two contiguous runs of stripes, each read forward in
// file order. Each stripe still sums its own tiles in file order inside
// one goroutine, so the results are the same bits as the one-stripe walk's,
// for any thread count.

// pairsPlan reports whether matvecs over p walk stripe pairs: the
// engine's kernel pairs Q4_0 tiles, p's tiles are all Q4_0, and there are
// two stripes to pair.
func (e *Engine) pairsPlan(p *matPlan) bool { return e.pairs && p.q4 && len(p.stripes) > 1 }

// pairCount is the number of work items for n stripes paired this way;
// with n odd the last item is the middle stripe alone.
func pairCount(n int) int { return (n + 1) / 2 }

// pair computes stripes i and i+h of the running matvec.
func (j *matvecJob) pair(i int) {
	p := j.p
	h := pairCount(len(p.stripes))
	if i+h >= len(p.stripes) {
		j.stripe(i)
		return
	}
	a, b := &p.stripes[i], &p.stripes[i+h]
	walkPair(a, b, stripeAhead(p.stripes, i), stripeAhead(p.stripes, i+h), j.a, j.outs[a.out], j.outs[b.out], j.hook)
}

// walkPair is walkStripe for stripes a and b at once, into ya and yb
// (indexed by output row): stripes with the same number of tiles (every
// pair of a matrix's stripes but after a shard plan's merge) are walked
// tile by tile together, through the two-stream kernel where the tiles
// share their columns; others one after the other. Each stripe's tiles are
// still summed in file order, so the bits are walkStripe's.
func walkPair(a, b *stripe, nextA, nextB []*cflowfmt.MappedTile, x *actVec, ya, yb []float32, hook func(off int64, m archspec.MatrixID)) {
	if len(a.tiles) != len(b.tiles) {
		walkStripe(a, nextA, x, ya, hook)
		walkStripe(b, nextB, x, yb, hook)
		return
	}
	for k, ta := range a.tiles {
		tb := b.tiles[k]
		tileAhead(a.tiles, k, nextA)
		tileAhead(b.tiles, k, nextB)
		if hook != nil {
			hook(ta.Offset, ta.Matrix)
			hook(tb.Offset, tb.Matrix)
		}
		if ta.ColOffset != tb.ColOffset {
			dotTile(&ta.Tile, x, int(ta.ColOffset), ya[ta.RowOffset:])
			dotTile(&tb.Tile, x, int(tb.ColOffset), yb[tb.RowOffset:])
			continue
		}
		dotPair(&ta.Tile, &tb.Tile, x, int(ta.ColOffset), ya[ta.RowOffset:], yb[tb.RowOffset:])
	}
}

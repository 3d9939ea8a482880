package engine

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/cflow-dev/cflow/quant"
)

// TestHeadGroupsMatchesHeadsEach: on a path with a multi-vector F32
// kernel, attention runs several query heads per item (headGroups) and
// cuts the last value block to its live positions; every head's output
// must still be the single-head path's (headsEach) to the bit, since the
// int8 paths round activations downstream and an ulp would flip them.
// Geometries: TinyLlama's (four heads per item, the four-vector kernel),
// three heads per item with 12-wide heads (kernel tails), one KV head
// with a sliding window, one head per item, an MQA model whose groups are
// halved to give the 2-thread pool two items; lengths on and off block and
// chunk edges.
func TestHeadGroupsMatchesHeadsEach(t *testing.T) {
	if !testKernel.HasF32Rows() {
		t.Skipf("path %s has no multi-vector F32 kernel", testKernel)
	}
	e := newEngine(t, archCases()[0].build(quant.Q8_0, 3).m, 2)
	rng := rand.New(rand.NewPCG(4, 7))
	for _, g := range []struct{ H, Hkv, hd, window int }{
		{32, 4, 64, 0}, {12, 4, 12, 0}, {8, 1, 16, 100}, {6, 6, 64, 0}, {4, 1, 64, 0},
	} {
		ve := *e // the engine with this geometry's head count
		ve.h.NumHeads = uint16(g.H)
		v := ve.newWorker(alone{}, e.lone.minItems)
		lp := &layerPlan{hd: g.hd, kvHeads: g.Hkv, window: g.window}
		c := kvCache{heads: g.Hkv, hd: g.hd}
		kv := make([]float32, g.Hkv*g.hd)
		vv := make([]float32, g.Hkv*g.hd)
		q := make([]float32, g.H*g.hd)
		pos := 0
		for _, n := range []int{1, 7, 9, 35, 128, 129, 165, 200, 263, 290} {
			for ; pos < n; pos++ {
				for i := range kv {
					kv[i], vv[i] = float32(rng.NormFloat64()*2), float32(rng.NormFloat64())
				}
				c.store(pos, kv, vv)
			}
			for i := range q {
				q[i] = float32(rng.NormFloat64())
			}
			start := 0
			if g.window > 0 && n > g.window {
				start = n - g.window
			}
			got, want := make([]float32, len(q)), make([]float32, len(q))
			v.headGroups(&c, lp, q, got, n, start)
			v.headsEach(&c, lp, q, want, n, start)
			for i := range got {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("%d heads, %d KV heads, head dim %d, window %d, n %d: head %d dim %d: %v, single-head path %v",
						g.H, g.Hkv, g.hd, g.window, n, i/g.hd, i%g.hd, got[i], want[i])
				}
			}
		}
	}
}

// TestHeadsPerGroup: four heads per item where the group allows it, fewer
// where a decode step's pool would otherwise have idle threads, and never
// a count that does not divide the group.
func TestHeadsPerGroup(t *testing.T) {
	for _, c := range []struct{ h, g, min, want int }{
		{32, 8, 1, 4}, {32, 8, 2, 4}, {32, 8, 16, 2}, {32, 8, 64, 1},
		{4, 4, 1, 4}, {4, 4, 2, 2}, {12, 3, 2, 3}, {10, 5, 1, 1}, {6, 1, 4, 1},
	} {
		if got := headsPerGroup(c.h, c.g, c.min); got != c.want {
			t.Errorf("headsPerGroup(%d heads, %d per KV head, %d items) = %d, want %d", c.h, c.g, c.min, got, c.want)
		}
	}
}

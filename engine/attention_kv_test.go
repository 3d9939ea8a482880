package engine

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/cflow-dev/cflow/quant"
)

// cachedKV reads position pos, head h, element i of a cache's keys (val
// false) or values back from its storage, as the layouts in seq.go define
// them (an independent reading: attention never dequantizes).
func cachedKV(c *kvCache, pos, h, i int, val bool) float32 {
	blk, t := pos/kvBlock, pos%kvBlock
	typ, ng := c.kt, quant.Groups(c.hd)
	if val {
		typ = c.vt
	}
	row := h*kvBlock + t
	switch {
	case typ == KVF32 && !val:
		return c.k[blk][row*c.hd+i]
	case typ == KVF32:
		return c.v[blk][(h*c.hd+i)*kvBlock+t]
	case typ == KVF16 && !val:
		return quant.F16ToF32(c.k16[blk][row*c.hd+i])
	case typ == KVF16:
		return quant.F16ToF32(c.v16[blk][(h*c.hd+i)*kvBlock+t])
	}
	var sc, d []byte
	if val {
		sc, d = c.vs[blk], c.vq[blk]
	} else {
		sc, d = c.ks[blk], c.kq[blk]
	}
	j := i / quant.GroupSize
	s := quant.F16ToF32(binary.LittleEndian.Uint16(sc[(row*ng+j)*2:]))
	return s * float32(int8(d[(row*ng+j)*32+i%quant.GroupSize]))
}

// storeTol is how far a stored value may sit from what was stored: f16
// rounds to 11 significant bits; q8_0 to half a step of absmax/127 (plus
// the f16 rounding of the scale, relative 2⁻¹¹ of absmax·127/127).
func storeTol(t KVType, x, absmax float64) float64 {
	switch t {
	case KVF16:
		return math.Abs(x)*0x1p-11 + 0x1p-25 // half the smallest subnormal
	case KVQ8_0:
		return absmax/254 + 128*absmax/127*0x1p-11
	}
	return 0
}

// int8Query is the query as an int8 path's Dot sees it: per 32 values,
// scale absmax/127, each rounded half to even (quant's activation rule),
// dequantized.
func int8Query(q []float32) []float32 {
	out := make([]float32, len(q))
	for g := 0; g < len(q); g += quant.GroupSize {
		blk := q[g:min(len(q), g+quant.GroupSize)]
		var am float32
		for _, v := range blk {
			am = max(am, float32(math.Abs(float64(v))))
		}
		d := am / 127
		for i, v := range blk {
			if d != 0 {
				out[g+i] = d * float32(math.RoundToEven(float64(v/d)))
			}
		}
	}
	return out
}

// TestHeadsKVMatchesOracle runs attention over every mix of f32, f16 and
// q8_0 keys and values (not both f32: that is TestHeadGroupsMatchesHeadsEach)
// against a float64 softmax attention over the cache's stored values read
// back independently (cachedKV), on the float path and on the engine's
// default path (an int8 path quantizes the query per 32 for q8_0 keys:
// the oracle then uses that query). Stored values are checked against
// what was stored within each type's rounding. Geometries as in
// TestHeadGroupsMatchesHeadsEach, lengths across block edges, a window.
func TestHeadsKVMatchesOracle(t *testing.T) {
	e := newEngine(t, archCases()[0].build(quant.Q8_0, 3).m, 2)
	kernels := []*quant.Kernel{testKernel}
	if d := quant.DefaultKernel(); d != testKernel {
		kernels = append(kernels, d)
	}
	rng := rand.New(rand.NewPCG(35, 11))
	for _, kern := range kernels {
		for _, kt := range []KVType{KVF32, KVF16, KVQ8_0} {
			for _, vt := range []KVType{KVF32, KVF16, KVQ8_0} {
				if kt == KVF32 && vt == KVF32 {
					continue
				}
				for _, g := range []struct{ H, Hkv, hd, window int }{
					{32, 4, 64, 0}, {12, 4, 48, 0}, {8, 1, 16, 100}, {4, 1, 64, 0},
				} {
					name := fmt.Sprintf("%s/k=%v,v=%v/%dx%d", kern, kt, vt, g.H, g.hd)
					headsKVCase(t, name, e, kern, kt, vt, g.H, g.Hkv, g.hd, g.window, rng)
				}
			}
		}
	}
}

func headsKVCase(t *testing.T, name string, e *Engine, kern *quant.Kernel, kt, vt KVType, H, Hkv, hd, window int, rng *rand.Rand) {
	ve := *e
	ve.h.NumHeads = uint16(H)
	ve.kernel = kern
	w := ve.newWorker(alone{}, e.lone.minItems)
	lp := &layerPlan{hd: hd, kvHeads: Hkv, window: window}
	c := kvCache{heads: Hkv, hd: hd, kt: kt, vt: vt}
	q := make([]float32, H*hd)
	scale := w.attnScale(hd)
	pos := 0
	for _, n := range []int{1, 9, 128, 129, 200, 290} {
		for ; pos < n; pos++ {
			k, v := make([]float32, Hkv*hd), make([]float32, Hkv*hd)
			for i := range k {
				k[i], v[i] = float32(rng.NormFloat64()*2), float32(rng.NormFloat64())
			}
			c.store(pos, k, v)
			for h := range Hkv {
				for i := range hd {
					for _, kv := range []struct {
						typ  KVType
						src  []float32
						isV  bool
						name string
					}{{kt, k, false, "key"}, {vt, v, true, "value"}} {
						got, x := float64(cachedKV(&c, pos, h, i, kv.isV)), float64(kv.src[h*hd+i])
						var am float64
						for _, y := range kv.src[h*hd+i/32*32 : h*hd+min(hd, i/32*32+32)] {
							am = math.Max(am, math.Abs(float64(y)))
						}
						if math.Abs(got-x) > storeTol(kv.typ, x, am) {
							t.Fatalf("%s: pos %d head %d: %s %d stored as %v, was %v", name, pos, h, kv.name, i, got, x)
						}
					}
				}
			}
		}
		for i := range q {
			q[i] = float32(rng.NormFloat64())
		}
		start := 0
		if window > 0 && n > window {
			start = n - window
		}
		got := make([]float32, len(q))
		w.heads(&c, lp, q, got, n, start)
		for j := range H {
			kvh := j * Hkv / H
			qh := q[j*hd : (j+1)*hd]
			if kt == KVQ8_0 && kern.QuantizesActivations() {
				qh = int8Query(qh)
			}
			s := make([]float64, n)
			mx := math.Inf(-1)
			for p := start; p < n; p++ {
				for i := range hd {
					s[p] += float64(qh[i]) * float64(cachedKV(&c, p, kvh, i, false))
				}
				s[p] *= scale
				mx = math.Max(mx, s[p])
			}
			var sum float64
			for p := start; p < n; p++ {
				s[p] = math.Exp(s[p] - mx)
				sum += s[p]
			}
			for i := range hd {
				var want float64
				for p := start; p < n; p++ {
					want += s[p] / sum * float64(cachedKV(&c, p, kvh, i, true))
				}
				if d := math.Abs(float64(got[j*hd+i]) - want); d > 2e-4*(1+math.Abs(want)) {
					t.Fatalf("%s: n %d (window %d): head %d dim %d: %v, oracle %v", name, n, window, j, i, got[j*hd+i], want)
				}
			}
		}
	}
}

// TestStepAllocatesNothingKV is TestStepAllocatesNothing for the f16 and
// q8_0 caches (and a mix): their attention (runKV) reuses the item's
// scratch and the query Vecs, so a decode step allocates nothing once the
// KV block exists. Both the default (int8) path and its float twin.
func TestStepAllocatesNothingKV(t *testing.T) {
	tm := archCases()[0].build(quant.Q4_0, 5)
	for _, k := range []*quant.Kernel{quant.DefaultKernel(), quant.DefaultKernel().Float()} {
		for _, ct := range [][2]KVType{{KVF16, KVF16}, {KVQ8_0, KVQ8_0}, {KVQ8_0, KVF16}} {
			e, err := New(tm.m, Options{Threads: 1, Kernel: k, CacheK: ct[0], CacheV: ct[1]})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(e.Close)
			if _, err := e.Step(1); err != nil {
				t.Fatal(err)
			}
			tok := 2
			if n := testing.AllocsPerRun(10, func() {
				if _, err := e.Step(tok % int(e.h.VocabSize)); err != nil {
					t.Fatal(err)
				}
				tok++
			}); n != 0 {
				t.Errorf("%s, k=%v v=%v: %v allocations per 1-thread Step, want 0", k, ct[0], ct[1], n)
			}
		}
	}
}

// TestKVBytesPerPosition: f16 stores exactly half of f32's bytes per
// position, q8_0 34 bytes per 32-value group of each head, and a sequence's KVBytes after
// one block is kvBlock positions of them.
func TestKVBytesPerPosition(t *testing.T) {
	tm := archCases()[0].build(quant.Q4_0, 5)
	per := map[KVType]int64{}
	var q8 int64 // 34 bytes per 32-value group, a short last group padded
	for _, ct := range []KVType{KVF32, KVF16, KVQ8_0} {
		e, err := New(tm.m, Options{Threads: 1, Kernel: testKernel, CacheK: ct, CacheV: ct})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(e.Close)
		per[ct] = e.KVBytesPerPosition()
		var vals int64 // key and value elements per position, from the header
		for p := range e.passes {
			lp := e.layers[p/e.iters]
			vals += 2 * int64(lp.kvHeads*lp.hd)
			if ct == KVF32 {
				q8 += 2 * int64(lp.kvHeads*quant.Groups(lp.hd)*34)
			}
		}
		if ct == KVF32 && per[ct] != 4*vals {
			t.Fatalf("f32: %d bytes per position, want %d", per[ct], 4*vals)
		}
		s := e.NewSequence()
		if _, err := e.StepBatch([]*Sequence{s}, []int{1}); err != nil {
			t.Fatal(err)
		}
		if got := s.KVBytes(); got != kvBlock*per[ct] {
			t.Errorf("%v: KVBytes %d after one block, want %d", ct, got, kvBlock*per[ct])
		}
	}
	if per[KVF16]*2 != per[KVF32] {
		t.Errorf("f16 %d bytes per position, f32 %d: not half", per[KVF16], per[KVF32])
	}
	if per[KVQ8_0] != q8 {
		t.Errorf("q8_0 %d bytes per position, want %d", per[KVQ8_0], q8)
	}
}

package quant

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"
)

// matrix is a rows×cols weight matrix cut into tiles in the file's stripe
// order, all carved out of one byte arena, as a mapped file would hold them.
type matrix struct {
	typ        Type
	rows, cols int
	tiles      []Tile // stripe-major: stripe s, column tile c at s*ct+c
	bytes      int64  // scale + data bytes, what b.SetBytes counts
}

// newMatrix lays out the tiles of a rows×cols matrix of type typ in arena
// (which must be large enough; see matrixBytes). Weights are arena bytes
// (random); scales are overwritten with small valid f16 values so no NaN or
// subnormal reaches the float units.
func newMatrix(arena []byte, typ Type, rows, cols int) *matrix {
	m := &matrix{typ: typ, rows: rows, cols: cols}
	off := 0
	for r0 := 0; r0 < rows; r0 += MaxTileRows {
		for c0 := 0; c0 < cols; c0 += MaxTileCols {
			tr, tc := min(MaxTileRows, rows-r0), min(MaxTileCols, cols-c0)
			sb, db := typ.ScaleBytes(tr, tc), typ.DataBytes(tr, tc)
			t := Tile{Type: typ, Rows: tr, Cols: tc, Scales: arena[off : off+sb : off+sb], Data: arena[off+sb : off+sb+db : off+sb+db]}
			for i := 0; i < sb; i += 2 {
				binary.LittleEndian.PutUint16(t.Scales[i:], 0x2000|uint16(i&0x3ff)) // ~2^-7
			}
			if typ == F32 {
				for i := 0; i < db; i += 4 {
					binary.LittleEndian.PutUint32(t.Data[i:], 0x3c000000|binary.LittleEndian.Uint32(t.Data[i:])&0x807fffff)
				}
			}
			m.tiles = append(m.tiles, t)
			m.bytes += int64(sb + db)
			off += (sb + db + 15) &^ 15 // tiles start 16-byte aligned, as in files
		}
	}
	return m
}

// matrixBytes is the arena size newMatrix needs.
func matrixBytes(typ Type, rows, cols int) int {
	n := 0
	for r0 := 0; r0 < rows; r0 += MaxTileRows {
		for c0 := 0; c0 < cols; c0 += MaxTileCols {
			tr, tc := min(MaxTileRows, rows-r0), min(MaxTileCols, cols-c0)
			n += (typ.ScaleBytes(tr, tc) + typ.DataBytes(tr, tc) + 15) &^ 15
		}
	}
	return n
}

// randomArena returns n random bytes on huge pages where the OS gives them
// (hugeBytes), as a mapped model file's tiles are.
func randomArena(n int) []byte {
	b := hugeBytes(n)
	rng := rand.NewChaCha8([32]byte{1})
	_, _ = rng.Read(b)
	return b
}

// matvec is one whole product: prepare the activation, then every tile.
// If laps is not nil it receives the time of each stripe (all column tiles
// of 128 rows), appended.
func (m *matrix) matvec(v *Vec, x, y []float32, laps *[]time.Duration) {
	v.Set(x)
	ct := (m.cols + MaxTileCols - 1) / MaxTileCols
	for s := 0; s*ct < len(m.tiles); s++ {
		t0 := time.Now()
		for c := 0; c < ct; c++ {
			Dot(&m.tiles[s*ct+c], v, c*MaxTileCols, y[s*MaxTileRows:])
		}
		if laps != nil {
			*laps = append(*laps, time.Since(t0))
		}
	}
}

func benchMatrix(b *testing.B, m *matrix) {
	for _, name := range allPaths {
		b.Run("kernel="+name, func(b *testing.B) {
			k, err := KernelByName(name)
			if err != nil {
				b.Skip(err)
			}
			x := randActivation(rand.New(rand.NewPCG(1, 1)), 0, m.cols)[:m.cols]
			v, y := k.NewVec(m.cols), make([]float32, m.rows)
			m.matvec(v, x, y, nil) // warm caches and page tables
			ct := (m.cols + MaxTileCols - 1) / MaxTileCols
			laps := make([]time.Duration, 0, b.N*len(m.tiles)/ct)
			b.SetBytes(m.bytes)
			b.ResetTimer()
			start := time.Now()
			for range b.N {
				m.matvec(v, x, y, &laps)
			}
			b.ReportMetric(float64(m.bytes)*float64(b.N)/time.Since(start).Seconds()/1e9, "GB/s")
			// On a shared machine the mean includes other processes' time
			// slices. A stripe takes microseconds, so most stripes run
			// undisturbed: the median stripe is what one core does (Set,
			// measured by BenchmarkVecSet, is left out of this figure).
			b.StopTimer()
			slices.Sort(laps)
			stripeBytes := m.bytes / int64(len(m.tiles)/ct)
			b.ReportMetric(float64(stripeBytes)/laps[len(laps)/2].Seconds()/1e9, "median-GB/s")
		})
	}
}

// BenchmarkDotL2 runs whole matrix-vector products over matrices of about
// 0.5–1 MiB, which stay in this core's L2 between iterations: the kernels'
// arithmetic rate, with scalar as the baseline.
func BenchmarkDotL2(b *testing.B) {
	for _, c := range []struct {
		typ        Type
		rows, cols int
	}{{Q4_0, 1024, 1024}, {Q8_0, 1024, 1024}, {F32, 512, 512}} {
		m := newMatrix(randomArena(matrixBytes(c.typ, c.rows, c.cols)), c.typ, c.rows, c.cols)
		b.Run(fmt.Sprintf("type=%s", c.typ), func(b *testing.B) { benchMatrix(b, m) })
	}
}

// BenchmarkDotDRAM runs products over a matrix far larger than the last
// level cache (CFLOW_BENCH_DRAM_MIB, default 768 MiB of tiles; this machine
// reports a 260 MiB L3), 4096 columns wide like a hidden state, so weight
// bytes stream from memory. Run it with -benchtime 3x: one scalar product
// takes seconds.
func BenchmarkDotDRAM(b *testing.B) {
	mib := 768
	if s := os.Getenv("CFLOW_BENCH_DRAM_MIB"); s != "" {
		if n, err := strconv.Atoi(s); err == nil && n > 0 {
			mib = n
		}
	}
	const cols = 4096
	arena := randomArena(mib << 20)
	for _, typ := range []Type{Q4_0, Q8_0, F32} {
		rowBytes := matrixBytes(typ, MaxTileRows, cols) / MaxTileRows
		rows := (mib << 20) / rowBytes / MaxTileRows * MaxTileRows
		m := newMatrix(arena, typ, rows, cols)
		b.Run(fmt.Sprintf("type=%s", typ), func(b *testing.B) { benchMatrix(b, m) })
	}
}

// BenchmarkStripe compares DotStripe over Q, K and V tiles with three Dot
// calls, the question docs/PERFORMANCE.md answers.
func BenchmarkStripe(b *testing.B) {
	const cols = 1024
	arena := randomArena(3 * matrixBytes(Q4_0, MaxTileRows, cols))
	m := newMatrix(arena, Q4_0, 3*MaxTileRows, cols)
	x := randActivation(rand.New(rand.NewPCG(1, 1)), 0, cols)[:cols]
	v := NewVec(cols)
	v.Set(x)
	ys := [][]float32{make([]float32, MaxTileRows), make([]float32, MaxTileRows), make([]float32, MaxTileRows)}
	ct := cols / MaxTileCols
	b.Run("dot3", func(b *testing.B) {
		b.SetBytes(m.bytes)
		for range b.N {
			for c := 0; c < ct; c++ {
				for s := 0; s < 3; s++ {
					Dot(&m.tiles[s*ct+c], v, c*MaxTileCols, ys[s])
				}
			}
		}
	})
	b.Run("stripe", func(b *testing.B) {
		b.SetBytes(m.bytes)
		tiles := make([]*Tile, 3)
		for range b.N {
			for c := 0; c < ct; c++ {
				for s := 0; s < 3; s++ {
					tiles[s] = &m.tiles[s*ct+c]
				}
				DotStripe(tiles, v, c*MaxTileCols, ys)
			}
		}
	})
}

// BenchmarkVecSet is the once-per-product preparation cost for a 4096-wide
// activation under each kernel.
func BenchmarkVecSet(b *testing.B) {
	b.ReportAllocs()
	x := randActivation(rand.New(rand.NewPCG(1, 1)), 0, 4096)[:4096]
	for _, name := range allPaths {
		b.Run("kernel="+name, func(b *testing.B) {
			k, err := KernelByName(name)
			if err != nil {
				b.Skip(err)
			}
			v := k.NewVec(len(x))
			for range b.N {
				v.Set(x)
			}
		})
	}
}

// BenchmarkDotBatch is batched prefill's inner loop: every tile of a
// 4096×4096 matrix (larger than L2) applied to B activation columns with
// DotBatch. Per column, compare ns/op/B with B=1 (one Dot per tile); the
// col-GB/s metric is weight bytes × B per second, what a token-by-token
// loop would have had to stream (median stripe, see benchMatrix).
func BenchmarkDotBatch(b *testing.B) {
	const n = 4096
	for _, typ := range []Type{Q4_0, Q8_0} {
		m := newMatrix(randomArena(matrixBytes(typ, n, n)), typ, n, n)
		for _, name := range allPaths {
			k, err := KernelByName(name)
			if err != nil || name == "scalar" {
				continue
			}
			for _, B := range []int{1, 4, 8, 16} {
				b.Run(fmt.Sprintf("type=%s/kernel=%s/B=%d", typ, name, B), func(b *testing.B) {
					bytes, sec := benchStripes(b, k, m, n, n, B)
					b.ReportMetric(bytes*float64(B)/sec/1e9, "median-col-GB/s")
				})
			}
		}
	}
}

// BenchmarkDotBatchTile times one L1-resident 128×256 tile (the file's
// tile size) against B columns, Dot for B=1 and DotBatch otherwise: the
// multi-column kernels' arithmetic rate with no memory traffic, the figure
// their tuning is judged by (docs/PERFORMANCE.md, log at 0382674, "Zen 3: q4avx2i8x4").
// Timing 20 calls at a time, best-ns/call is the fastest of those laps: on
// a shared machine the best lap is the one no other process interrupted.
func BenchmarkDotBatchTile(b *testing.B) {
	const rows, cols, calls = MaxTileRows, MaxTileCols, 20
	for _, typ := range []Type{Q4_0, Q8_0} {
		m := newMatrix(randomArena(matrixBytes(typ, rows, cols)), typ, rows, cols)
		t := &m.tiles[0]
		for _, name := range allPaths {
			k, err := KernelByName(name)
			if err != nil || name == "scalar" {
				continue
			}
			for _, B := range []int{1, 4, 8} {
				b.Run(fmt.Sprintf("type=%s/kernel=%s/B=%d", typ, name, B), func(b *testing.B) {
					xs, ys := benchColumns(k, B, rows, cols)
					best := time.Duration(1 << 62)
					b.ResetTimer()
					for range b.N {
						t0 := time.Now()
						for range calls {
							if B == 1 {
								Dot(t, xs[0], 0, ys[0])
							} else {
								DotBatch(t, xs, 0, ys)
							}
						}
						best = min(best, time.Since(t0))
					}
					b.ReportMetric(float64(best.Nanoseconds())/calls, "best-ns/call")
				})
			}
		}
	}
}

// BenchmarkDotBatchDRAM is BenchmarkDotBatch over a matrix far larger than
// the last level cache (CFLOW_BENCH_DRAM_MIB, default 512 MiB of tiles):
// the multi-column kernels while weights stream from memory, as in a
// batched decode or prefill pass. weight-GB/s is weight bytes per second
// of the median stripe (each byte serves all B columns).
func BenchmarkDotBatchDRAM(b *testing.B) {
	mib := 512
	if s := os.Getenv("CFLOW_BENCH_DRAM_MIB"); s != "" {
		if n, err := strconv.Atoi(s); err == nil && n > 0 {
			mib = n
		}
	}
	const cols = 4096
	arena := randomArena(mib << 20)
	for _, typ := range []Type{Q4_0, Q8_0} {
		rowBytes := matrixBytes(typ, MaxTileRows, cols) / MaxTileRows
		rows := (mib << 20) / rowBytes / MaxTileRows * MaxTileRows
		m := newMatrix(arena, typ, rows, cols)
		for _, name := range allPaths {
			k, err := KernelByName(name)
			if err != nil || name == "scalar" {
				continue
			}
			for _, B := range []int{1, 2, 3, 4} {
				b.Run(fmt.Sprintf("type=%s/kernel=%s/B=%d", typ, name, B), func(b *testing.B) {
					bytes, sec := benchStripes(b, k, m, rows, cols, B)
					b.ReportMetric(bytes/sec/1e9, "weight-GB/s")
				})
			}
		}
	}
}

// benchColumns is a DotBatch benchmark's B columns: seeded random
// activations of kernel k over cols inputs (the same for a given B in
// every benchmark) and zeroed outputs of rows each.
func benchColumns(k *Kernel, B, rows, cols int) ([]*Vec, [][]float32) {
	rng := rand.New(rand.NewPCG(1, uint64(B)))
	xs, ys := make([]*Vec, B), make([][]float32, B)
	for j := range xs {
		xs[j] = k.NewVec(cols)
		xs[j].Set(randActivation(rng, 0, cols)[:cols])
		ys[j] = make([]float32, rows)
	}
	return xs, ys
}

// benchStripes applies m (rows×cols) to B random columns with DotBatch a
// stripe at a time, b.N times, and returns a stripe's weight bytes and the
// median stripe's seconds: as in benchMatrix, the median stripe is what
// one core does when no other process takes its time slice.
func benchStripes(b *testing.B, k *Kernel, m *matrix, rows, cols, B int) (bytes, sec float64) {
	xs, ys := benchColumns(k, B, rows, cols)
	yv := make([][]float32, B)
	ct := cols / MaxTileCols
	laps := make([]time.Duration, 0, b.N*len(m.tiles)/ct)
	b.ResetTimer()
	for range b.N {
		for s := 0; s*ct < len(m.tiles); s++ {
			t0 := time.Now()
			for j := range ys {
				yv[j] = ys[j][s*MaxTileRows:]
			}
			for c := 0; c < ct; c++ {
				DotBatch(&m.tiles[s*ct+c], xs, c*MaxTileCols, yv)
			}
			laps = append(laps, time.Since(t0))
		}
	}
	b.StopTimer()
	slices.Sort(laps)
	return float64(m.bytes / int64(len(m.tiles)/ct)), laps[len(laps)/2].Seconds()
}

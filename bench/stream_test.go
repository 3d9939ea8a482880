package bench

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"
	"unsafe"

	"github.com/cflow-dev/cflow/cflowfmt"
	"github.com/cflow-dev/cflow/quant"
)

// BenchmarkDecodeStream is issue 17's roofline question on one core: how
// close does the dot kernel come to the read probe when the weights stream
// from DRAM in the file's own layout? It lays out a 4096-column Q4_0
// matrix as a .cflow file does (a 16-byte tile header before each tile,
// tiles 16-byte aligned, stripes contiguous), CFLOW_BENCH_DRAM_MIB MiB of
// it (default 768, far past this VM's 260 MiB L3), and in each of b.N
// rounds times, stripe by stripe, the probe's reader (sum) over the same
// bytes and then each kernel's products. It reports per kernel the median
// of the rounds' median stripe rates and that as % of the probe's, so
// other tenants' memory traffic hits both alike. A path with a two-stream
// kernel (quant.Kernel.PairsQ4) is timed a second time as the engine runs
// it (runtime/matvec_pairs.go): stripes s and s+n/2 at once through
// quant.DotPair, reported as "<path>pair":
//
//	go test -run '^$' -bench DecodeStream -benchtime 7x ./bench
func BenchmarkDecodeStream(b *testing.B) {
	mib := 768
	if s := os.Getenv("CFLOW_BENCH_DRAM_MIB"); s != "" {
		if n, err := strconv.Atoi(s); err == nil && n > 0 {
			mib = n
		}
	}
	const cols, tr, tc = 4096, quant.MaxTileRows, quant.MaxTileCols
	sb, db := quant.Q4_0.ScaleBytes(tr, tc), quant.Q4_0.DataBytes(tr, tc)
	tileBytes := int(cflowfmt.AlignUp(int64(cflowfmt.TileHeaderSize + sb + db)))
	ct := cols / tc
	stripes := (mib << 20) / (tileBytes * ct)
	// On huge pages, as the model file's mapping is (hugeBytes); 8-byte
	// aligned for the probe's uint64 view.
	raw, release := hugeBytes(stripes * ct * tileBytes)
	defer release()
	arena := unsafe.Slice((*uint64)(unsafe.Pointer(&raw[0])), len(raw)/8)
	rng := rand.NewChaCha8([32]byte{1})
	_, _ = rng.Read(raw)
	tiles := make([]quant.Tile, 0, stripes*ct)
	for i := range stripes * ct {
		off := i*tileBytes + cflowfmt.TileHeaderSize
		t := quant.Tile{Type: quant.Q4_0, Rows: tr, Cols: tc, Scales: raw[off : off+sb], Data: raw[off+sb : off+sb+db]}
		for j := 0; j < sb; j += 2 {
			binary.LittleEndian.PutUint16(t.Scales[j:], 0x2000|uint16(j&0x3ff)) // ~2^-7, no NaN
		}
		tiles = append(tiles, t)
	}
	x := make([]float32, cols)
	for i := range x {
		x[i] = float32(rand.NormFloat64())
	}
	y := make([]float32, stripes*tr)
	stripeBytes := ct * tileBytes
	laps := make([]time.Duration, stripes)
	// rate times f(s) for s < n, each step reading bytes, and gives the
	// median step's GB/s.
	rate := func(n, bytes int, f func(s int)) float64 {
		for s := range n {
			t0 := time.Now()
			f(s)
			laps[s] = time.Since(t0)
		}
		l := laps[:n]
		slices.Sort(l)
		return float64(bytes) / l[n/2].Seconds() / 1e9
	}
	var ks, pairs []*quant.Kernel
	for _, k := range quant.Kernels() {
		if k.Name() != "scalar" {
			ks = append(ks, k)
		}
		if k.PairsQ4() {
			pairs = append(pairs, k)
		}
	}
	rates := make([][]float64, len(ks)+len(pairs)+1) // [0]: the probe
	h := stripes / 2
	var total uint64
	b.ResetTimer()
	for range b.N {
		rates[0] = append(rates[0], rate(stripes, stripeBytes, func(s int) {
			total += sum(arena[s*stripeBytes/8 : (s+1)*stripeBytes/8])
		}))
		for i, k := range ks {
			v := k.NewVec(cols)
			v.Set(x)
			rates[i+1] = append(rates[i+1], rate(stripes, stripeBytes, func(s int) {
				for c := range ct {
					quant.Dot(&tiles[s*ct+c], v, c*tc, y[s*tr:])
				}
			}))
		}
		for i, k := range pairs {
			v := k.NewVec(cols)
			v.Set(x)
			rates[len(ks)+i+1] = append(rates[len(ks)+i+1], rate(h, 2*stripeBytes, func(s int) {
				for c := range ct {
					quant.DotPair(&tiles[s*ct+c], &tiles[(s+h)*ct+c], v, c*tc, y[s*tr:], y[(s+h)*tr:])
				}
			}))
		}
	}
	b.StopTimer()
	probe := median(rates[0])
	b.ReportMetric(probe, "probe-GB/s")
	names := make([]string, 0, len(ks)+len(pairs))
	for _, k := range ks {
		names = append(names, k.Name())
	}
	for _, k := range pairs {
		names = append(names, k.Name()+"pair")
	}
	for i, name := range names {
		r := median(rates[i+1])
		b.ReportMetric(r, name+"-GB/s")
		b.ReportMetric(100*r/probe, name+"-%probe")
	}
	b.Logf("%s, %d MiB, %d rounds: probe %s GB/s", quant.CPU().Model, mib, b.N, fmt.Sprint(rates[0]))
	_ = total
}

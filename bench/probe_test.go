package bench

import (
	"math/rand/v2"
	"runtime"
	"testing"
)

// The parallel reader must touch every element exactly once, whatever the
// split: its sum equals a plain loop's for lengths that do not divide.
func TestReadAllSumsEveryElement(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 7, 8, 9, 15, 16, 17, 33, 1000, 4099} {
		buf := make([]uint64, n)
		var want uint64
		for i := range buf {
			buf[i] = r.Uint64()
			want += buf[i]
		}
		if got := sum(buf); got != want {
			t.Errorf("n=%d: sum %d, want %d", n, got, want)
		}
		for _, th := range []int{1, 2, 3, 8} {
			if got := readAll(buf, th); got != want {
				t.Errorf("n=%d threads=%d: sum %d, want %d", n, th, got, want)
			}
		}
	}
}

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		in   []float64
		want float64
	}{{nil, 0}, {[]float64{3}, 3}, {[]float64{5, 1, 3}, 3}, {[]float64{4, 1, 3, 2}, 2.5}} {
		if got := median(c.in); got != c.want {
			t.Errorf("median(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}

func TestReadBandwidthReports(t *testing.T) {
	p := ReadBandwidth(1<<20, 2, 3)
	if p.Bytes != 1<<20 || p.Threads != 2 || len(p.GBs) != 3 || p.Median <= 0 {
		t.Errorf("probe %+v", p)
	}
}

// BenchmarkSum reports the reader's speed from L1 (32 KiB) and from DRAM
// (256 MiB); the probe is meaningful only while the first is much faster.
func BenchmarkSum(b *testing.B) {
	for _, n := range []int{32 << 10, 256 << 20} {
		buf := make([]uint64, n/8)
		for i := range buf {
			buf[i] = uint64(i)
		}
		b.Run(map[int]string{32 << 10: "L1", 256 << 20: "DRAM"}[n], func(b *testing.B) {
			b.SetBytes(int64(n))
			var total uint64
			for b.Loop() {
				total += sum(buf)
			}
			runtime.KeepAlive(total)
		})
	}
}

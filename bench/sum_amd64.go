//go:build amd64 && !noasm

package bench

import "github.com/cflow-dev/cflow/quant"

// sumAVX2 adds n uint64 from p; n must be a multiple of 16.
//
//go:noescape
func sumAVX2(p *uint64, n int) uint64

// sumFast adds the longest prefix of b that is a multiple of 16 elements
// with AVX2 (four 32-byte accumulators, 128 bytes per iteration).
func sumFast(b []uint64) (int, uint64) {
	n := len(b) &^ 15
	if !quant.CPU().AVX2 || n == 0 {
		return 0, 0
	}
	return n, sumAVX2(&b[0], n)
}

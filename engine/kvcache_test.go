package engine

import (
	"math"
	"testing"
)

// The blocked KV cache stores each position's keys head-major and its
// values transposed, in any order, and forget leaves every value from a
// position on zero (the value tiles multiply whole blocks by zero
// probabilities, so a NaN left by an earlier sequence must not survive).
func TestKVCacheLayoutAndForget(t *testing.T) {
	c := kvCache{heads: 2, hd: 4}
	n := kvBlock + 40
	val := func(pos, h, i int, v bool) float32 {
		x := float32(pos*100 + h*10 + i)
		if v {
			return -x
		}
		return x
	}
	for _, pos := range []int{5, 0, n - 1, kvBlock, 1} { // out of order, across blocks
		k, v := make([]float32, 8), make([]float32, 8)
		for h := range 2 {
			for i := range 4 {
				k[h*4+i], v[h*4+i] = val(pos, h, i, false), val(pos, h, i, true)
			}
		}
		c.store(pos, k, v)
	}
	for _, pos := range []int{5, 0, n - 1, kvBlock, 1} {
		b, p := pos/kvBlock, pos%kvBlock
		for h := range 2 {
			for i := range 4 {
				if got := c.k[b][(h*kvBlock+p)*4+i]; got != val(pos, h, i, false) {
					t.Fatalf("key pos %d head %d [%d] = %v", pos, h, i, got)
				}
				if got := c.v[b][(h*4+i)*kvBlock+p]; got != val(pos, h, i, true) {
					t.Fatalf("value pos %d head %d [%d] = %v", pos, h, i, got)
				}
			}
		}
	}
	for b := range c.v {
		for i := range c.v[b] {
			c.v[b][i] = float32(math.NaN())
		}
	}
	c.forget(3)
	for b := range c.v {
		for r := range 8 {
			for p := range kvBlock {
				x := c.v[b][r*kvBlock+p]
				if pos := b*kvBlock + p; pos >= 3 && x != 0 || pos < 3 && !math.IsNaN(float64(x)) {
					t.Fatalf("after forget(3): value row %d at position %d is %v", r, pos, x)
				}
			}
		}
	}
}

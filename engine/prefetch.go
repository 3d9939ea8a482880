package engine

import (
	"unsafe"

	"github.com/cflow-dev/cflow/cflowfmt"
	"github.com/cflow-dev/cflow/quant"
)

// Between two tiles of a matvec the weight stream (hundreds of MB per
// token) has flushed the caches, so each tile's descriptor (a 96-byte
// cflowfmt.MappedTile), the stripe's tile list and the stripe itself are
// cache misses, paid one after another before the kernel can start on the
// tile's data. The stripe loops ask for them one step ahead instead:
// stripeAhead at a stripe's start, tileAhead before each tile's dot.

// stripeAhead prefetches, at the start of stripe i of ss, the stripe after
// the next one and the next stripe's tile list, and returns that list for
// tileAhead (nil after the last stripe).
func stripeAhead(ss []stripe, i int) []*cflowfmt.MappedTile {
	if i+2 < len(ss) {
		quant.Prefetch(unsafe.Pointer(&ss[i+2]))
	}
	if i+1 < len(ss) {
		next := ss[i+1].tiles
		quant.Prefetch(unsafe.Pointer(&next[0]))
		return next
	}
	return nil
}

// tileAhead prefetches the descriptor of the tile after ts[k]: ts[k+1], or
// the next stripe's first tile when ts[k] is the stripe's last.
func tileAhead(ts []*cflowfmt.MappedTile, k int, next []*cflowfmt.MappedTile) {
	if k+1 < len(ts) {
		quant.Prefetch(unsafe.Pointer(ts[k+1]))
	} else if next != nil {
		quant.Prefetch(unsafe.Pointer(next[0]))
	}
}

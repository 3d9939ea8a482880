package quant

// Tiles of the block codecs: Data is each row's blocks in order (a short
// last block zero-padded), no scale array. Until a file format holds them
// (Valid is false), these serve tests and the coming kernels: the oracle
// dot and single-weight reads.

// dotBlocksScalar is DotScalar for a block-codec tile.
func dotBlocksScalar(t *Tile, x, y []float32) {
	bw, bb := t.Type.BlockWeights(), t.Type.BlockBytes()
	nb := (t.Cols + bw - 1) / bw
	var pad [superBlock]float32
	for r := 0; r < t.Rows; r++ {
		var acc float32
		for b := 0; b < nb; b++ {
			blk := t.Data[(r*nb+b)*bb : (r*nb+b+1)*bb]
			xs := x[b*bw : min(t.Cols, (b+1)*bw)]
			if len(xs) < bw {
				clear(pad[:bw])
				copy(pad[:], xs)
				xs = pad[:bw]
			}
			acc += dotBlock(t.Type, blk, xs)
		}
		y[r] += acc
	}
}

// blockWeight dequantizes the block holding (r, c) and returns its value.
func (t *Tile) blockWeight(r, c int) float32 {
	bw, bb := t.Type.BlockWeights(), t.Type.BlockBytes()
	nb := (t.Cols + bw - 1) / bw
	b := r*nb + c/bw
	var out [superBlock]float32
	dequantizeBlock(t.Type, t.Data[b*bb:(b+1)*bb], out[:bw])
	return out[c%bw]
}

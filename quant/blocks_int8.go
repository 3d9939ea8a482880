package quant

// The block codecs on int8 activations: the engine's int8 paths round each
// 32-value activation group to int8 with an f32 scale dx (Vec.quantizeGo),
// and every K-quant sub-block (32 weights, or 16 for Q6_K) lies inside
// one such group, so a sub-block's product is an exact integer sum times
// two scales. dotBlocksInt8 is that arithmetic written out plainly, the
// oracle; dotBlocksInt8Go is the pure-Go kernel the int8 paths run until
// SIMD kernels exist, the same float steps in the same order over
// unpacked levels, so the two agree bit for bit (blocks_int8_test.go).

// int8Span is the part of activation group g a sub-block of n weights at
// tile column c0 reads: at most the tile's columns, so the levels of a
// zero-padded last block (not exactly zero for Q4_K's min) meet zeros.
func int8Span(t *Tile, c0, n int) int { return max(0, min(n, t.Cols-c0)) }

// dotBlocksInt8 is the int8-activation oracle for a block-codec tile.
func dotBlocksInt8(t *Tile, x *Vec, col int, y []float32) {
	bw, bb := t.Type.BlockWeights(), t.Type.BlockBytes()
	nb := (t.Cols + bw - 1) / bw
	g0 := col / GroupSize
	for r := 0; r < t.Rows; r++ {
		var acc float32
		for b := 0; b < nb; b++ {
			blk := t.Data[(r*nb+b)*bb : (r*nb+b+1)*bb]
			c0 := b * bw
			switch t.Type {
			case Q4_K, Q5_K:
				d, dmin := f16At(blk[0:]), f16At(blk[2:])
				for s := 0; s < 8; s++ {
					n := int8Span(t, c0+32*s, 32)
					g := g0 + (c0+32*s)/GroupSize
					qx := x.q8[g*GroupSize:]
					var isum, xsum int32
					for i := 0; i < n; i++ {
						var q uint8
						if t.Type == Q4_K {
							q = (blk[16+32*(s/2)+i] >> (4 * uint(s%2))) & 0xF
						} else {
							q = q5KLevel(blk, s, i)
						}
						isum += int32(q) * int32(qx[i])
						xsum += int32(qx[i])
					}
					sc, m := scaleMinK4(s, blk[4:16])
					acc += float32(float32(float32(d*float32(sc))*x.dx[g])*float32(isum)) -
						float32(float32(float32(dmin*float32(m))*x.dx[g])*float32(xsum))
				}
			case Q6_K:
				d := f16At(blk[208:])
				for s := 0; s < 16; s++ {
					n := int8Span(t, c0+16*s, 16)
					c := c0 + 16*s
					g := g0 + c/GroupSize
					qx := x.q8[g0*GroupSize+c:]
					var isum int32
					for i := 0; i < n; i++ {
						isum += q6KLevel(blk, 16*s+i) * int32(qx[i])
					}
					acc += float32(float32(float32(d*float32(int8(blk[192+s])))*x.dx[g]) * float32(isum))
				}
			case Q4_1:
				n := int8Span(t, c0, 32)
				g := g0 + c0/GroupSize
				qx := x.q8[g*GroupSize:]
				var isum, xsum int32
				for i := 0; i < n; i++ {
					q := blk[4+i%16] >> (4 * uint(i/16)) & 0xF
					isum += int32(q) * int32(qx[i])
					xsum += int32(qx[i])
				}
				acc += float32(float32(f16At(blk)*x.dx[g])*float32(isum)) + float32(float32(f16At(blk[2:])*x.dx[g])*float32(xsum))
			case Q5_0, Q5_1:
				n := int8Span(t, c0, 32)
				g := g0 + c0/GroupSize
				qx := x.q8[g*GroupSize:]
				q5 := blk[2:]
				if t.Type == Q5_1 {
					q5 = blk[4:]
				}
				var isum, xsum int32
				for i := 0; i < n; i++ {
					isum += int32(q5Level(q5, i)) * int32(qx[i])
					xsum += int32(qx[i])
				}
				if t.Type == Q5_0 {
					acc += float32(float32(f16At(blk)*x.dx[g]) * float32(isum-16*xsum))
				} else {
					acc += float32(float32(f16At(blk)*x.dx[g])*float32(isum)) + float32(float32(f16At(blk[2:])*x.dx[g])*float32(xsum))
				}
			}
		}
		y[r] += acc
	}
}

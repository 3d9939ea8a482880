package quant

// dotBlocksInt8Go is the int8 paths' kernel for block-codec tiles in pure
// Go (so the noasm build and every CPU have it): each block's levels are
// unpacked once into an array, then each sub-block is one integer dot and
// one integer sum against the Vec's int8 group, combined with the same
// float steps, in the same order, as dotBlocksInt8.
func dotBlocksInt8Go(t *Tile, x *Vec, col int, y []float32) {
	bw, bb := t.Type.BlockWeights(), t.Type.BlockBytes()
	nb := (t.Cols + bw - 1) / bw
	base := col // natural-order index of the tile's first column in x.q8
	var lv [superBlock]int32
	for r := 0; r < t.Rows; r++ {
		var acc float32
		for b := 0; b < nb; b++ {
			blk := t.Data[(r*nb+b)*bb : (r*nb+b+1)*bb]
			c0 := b * bw
			unpackLevels(t.Type, blk, &lv)
			switch t.Type {
			case Q4_K, Q5_K:
				d, dmin := f16At(blk[0:]), f16At(blk[2:])
				for s := 0; s < 8; s++ {
					c := c0 + 32*s
					n := int8Span(t, c, 32)
					isum, xsum := dotSum(lv[32*s:32*s+n], x.q8[base+c:base+c+n])
					dx := x.dx[(base+c)/GroupSize]
					sc, m := scaleMinK4(s, blk[4:16])
					acc += float32(float32(float32(d*float32(sc))*dx)*float32(isum)) -
						float32(float32(float32(dmin*float32(m))*dx)*float32(xsum))
				}
			case Q6_K:
				d := f16At(blk[208:])
				for s := 0; s < 16; s++ {
					c := c0 + 16*s
					n := int8Span(t, c, 16)
					isum, _ := dotSum(lv[16*s:16*s+n], x.q8[base+c:base+c+n])
					dx := x.dx[(base+c)/GroupSize]
					acc += float32(float32(float32(d*float32(int8(blk[192+s])))*dx) * float32(isum))
				}
			case Q5_0, Q5_1, Q4_1:
				n := int8Span(t, c0, 32)
				isum, xsum := dotSum(lv[:n], x.q8[base+c0:base+c0+n])
				dx := x.dx[(base+c0)/GroupSize]
				if t.Type == Q5_0 {
					acc += float32(float32(f16At(blk)*dx) * float32(isum-16*xsum))
				} else {
					acc += float32(float32(f16At(blk)*dx)*float32(isum)) + float32(float32(f16At(blk[2:])*dx)*float32(xsum))
				}
			}
		}
		y[r] += acc
	}
}

// dotSum is Σ l·q and Σ q over equal-length slices, in int32 (|l| ≤ 63,
// |q| ≤ 127, at most 32 terms: no overflow).
func dotSum(l []int32, q []int8) (isum, xsum int32) {
	q = q[:len(l)]
	for i, v := range l {
		isum += v * int32(q[i])
		xsum += int32(q[i])
	}
	return isum, xsum
}

// unpackLevels writes a block's levels in weight order: Q4_K/Q5_K/Q5_0/
// Q5_1 unsigned, Q6_K as q − 32.
func unpackLevels(t Type, b []byte, lv *[superBlock]int32) {
	switch t {
	case Q4_K:
		for j := 0; j < 4; j++ {
			q := b[16+32*j : 16+32*j+32]
			for i, v := range q {
				lv[64*j+i] = int32(v & 0xF)
				lv[64*j+32+i] = int32(v >> 4)
			}
		}
	case Q5_K:
		qh := b[16:48]
		for j := 0; j < 4; j++ {
			q := b[48+32*j : 48+32*j+32]
			for i, v := range q {
				lv[64*j+i] = int32(v&0xF) | int32(qh[i]>>(2*uint(j))&1)<<4
				lv[64*j+32+i] = int32(v>>4) | int32(qh[i]>>(2*uint(j)+1)&1)<<4
			}
		}
	case Q6_K:
		for h := 0; h < 2; h++ {
			ql, qh := b[64*h:64*h+64], b[128+32*h:128+32*h+32]
			o := lv[128*h : 128*h+128]
			for i := 0; i < 32; i++ {
				o[i] = int32(ql[i]&0xF|(qh[i]&3)<<4) - 32
				o[32+i] = int32(ql[32+i]&0xF|(qh[i]>>2&3)<<4) - 32
				o[64+i] = int32(ql[i]>>4|(qh[i]>>4&3)<<4) - 32
				o[96+i] = int32(ql[32+i]>>4|(qh[i]>>6&3)<<4) - 32
			}
		}
	case Q4_1:
		for i := 0; i < 16; i++ {
			lv[i] = int32(b[4+i] & 0xF)
			lv[16+i] = int32(b[4+i] >> 4)
		}
	case Q5_0, Q5_1:
		q5 := b[2:]
		if t == Q5_1 {
			q5 = b[4:]
		}
		for i := 0; i < 32; i++ {
			lv[i] = int32(q5Level(q5, i))
		}
	}
}

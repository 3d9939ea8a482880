//go:build !noasm

package quant

// f16RowsPath is path k's DotF16Rows kernel: the float twin of the path
// names its instruction set (the int8 paths read the f16 cache with their
// float twin's kernel: the cache has no int8 form to meet). nil: the Go
// loop (the scalar path).
func f16RowsPath(k *Kernel) f16RowsFunc {
	switch k.Float().name {
	case "avx2":
		return f16rows256
	case "avx512":
		return f16rows512Any
	}
	return nil
}

// f16rows512Any runs f16rows512 where the columns fill 16-lane chunks,
// else the AVX2 kernel (a value block cut to a multiple of 8 positions).
func f16rows512Any(w *uint16, rows, cols, wstride int, x *float32, xstride, nx int, y *float32, ystride int) {
	if cols%16 == 0 {
		f16rows512(w, rows, cols, wstride, x, xstride, nx, y, ystride)
		return
	}
	f16rows256(w, rows, cols, wstride, x, xstride, nx, y, ystride)
}

// q8AccPath is path k's AccumQ8Rows kernel, by its float twin's
// instruction set; nil: the Go loop.
func q8AccPath(k *Kernel) q8AccFunc {
	switch k.Float().name {
	case "avx2":
		return q8acc256
	case "avx512":
		return q8acc512
	}
	return nil
}

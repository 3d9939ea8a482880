// HSUM8 reduces the 8 floats of y (low half x) into the low lane of x:
// ((0+4)+(2+6))+((1+5)+(3+7)). Every AVX2 float reduction of a row's sum
// uses this one macro, so kernels that must agree to the bit (a tile's
// F32 product in Dot and in DotF32Rows, the four-column kernels and their
// single-column twins) add in the same order by construction.
#define HSUM8(y, x, xt) \
	VEXTRACTF128 $1, y, xt; \
	VADDPS       xt, x, x;  \
	VPERMILPS    $0x4e, x, xt; \
	VADDPS       xt, x, x;  \
	VPERMILPS    $0xb1, x, xt; \
	VADDSS       xt, x, x

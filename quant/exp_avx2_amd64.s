//go:build !noasm

#include "textflag.h"

// The AVX2 loops of ExpScores and SiLUMul: runtime.expCore's operations
// one for one on 8 lanes.

// Eight copies of each constant of runtime.expCore (Cephes expf), as f32
// bits, so the loop below takes them as 32-byte memory operands.
DATA explog2e<>+0(SB)/4, $0x3fb8aa3b
DATA explog2e<>+4(SB)/4, $0x3fb8aa3b
DATA explog2e<>+8(SB)/4, $0x3fb8aa3b
DATA explog2e<>+12(SB)/4, $0x3fb8aa3b
DATA explog2e<>+16(SB)/4, $0x3fb8aa3b
DATA explog2e<>+20(SB)/4, $0x3fb8aa3b
DATA explog2e<>+24(SB)/4, $0x3fb8aa3b
DATA explog2e<>+28(SB)/4, $0x3fb8aa3b
GLOBL explog2e<>(SB), RODATA|NOPTR, $32
DATA expround<>+0(SB)/4, $0x4b400000
DATA expround<>+4(SB)/4, $0x4b400000
DATA expround<>+8(SB)/4, $0x4b400000
DATA expround<>+12(SB)/4, $0x4b400000
DATA expround<>+16(SB)/4, $0x4b400000
DATA expround<>+20(SB)/4, $0x4b400000
DATA expround<>+24(SB)/4, $0x4b400000
DATA expround<>+28(SB)/4, $0x4b400000
GLOBL expround<>(SB), RODATA|NOPTR, $32
DATA expln2hi<>+0(SB)/4, $0x3f318000
DATA expln2hi<>+4(SB)/4, $0x3f318000
DATA expln2hi<>+8(SB)/4, $0x3f318000
DATA expln2hi<>+12(SB)/4, $0x3f318000
DATA expln2hi<>+16(SB)/4, $0x3f318000
DATA expln2hi<>+20(SB)/4, $0x3f318000
DATA expln2hi<>+24(SB)/4, $0x3f318000
DATA expln2hi<>+28(SB)/4, $0x3f318000
GLOBL expln2hi<>(SB), RODATA|NOPTR, $32
DATA expln2lo<>+0(SB)/4, $0xb95e8083
DATA expln2lo<>+4(SB)/4, $0xb95e8083
DATA expln2lo<>+8(SB)/4, $0xb95e8083
DATA expln2lo<>+12(SB)/4, $0xb95e8083
DATA expln2lo<>+16(SB)/4, $0xb95e8083
DATA expln2lo<>+20(SB)/4, $0xb95e8083
DATA expln2lo<>+24(SB)/4, $0xb95e8083
DATA expln2lo<>+28(SB)/4, $0xb95e8083
GLOBL expln2lo<>(SB), RODATA|NOPTR, $32
DATA expc0<>+0(SB)/4, $0x39506967
DATA expc0<>+4(SB)/4, $0x39506967
DATA expc0<>+8(SB)/4, $0x39506967
DATA expc0<>+12(SB)/4, $0x39506967
DATA expc0<>+16(SB)/4, $0x39506967
DATA expc0<>+20(SB)/4, $0x39506967
DATA expc0<>+24(SB)/4, $0x39506967
DATA expc0<>+28(SB)/4, $0x39506967
GLOBL expc0<>(SB), RODATA|NOPTR, $32
DATA expc1<>+0(SB)/4, $0x3ab743ce
DATA expc1<>+4(SB)/4, $0x3ab743ce
DATA expc1<>+8(SB)/4, $0x3ab743ce
DATA expc1<>+12(SB)/4, $0x3ab743ce
DATA expc1<>+16(SB)/4, $0x3ab743ce
DATA expc1<>+20(SB)/4, $0x3ab743ce
DATA expc1<>+24(SB)/4, $0x3ab743ce
DATA expc1<>+28(SB)/4, $0x3ab743ce
GLOBL expc1<>(SB), RODATA|NOPTR, $32
DATA expc2<>+0(SB)/4, $0x3c088908
DATA expc2<>+4(SB)/4, $0x3c088908
DATA expc2<>+8(SB)/4, $0x3c088908
DATA expc2<>+12(SB)/4, $0x3c088908
DATA expc2<>+16(SB)/4, $0x3c088908
DATA expc2<>+20(SB)/4, $0x3c088908
DATA expc2<>+24(SB)/4, $0x3c088908
DATA expc2<>+28(SB)/4, $0x3c088908
GLOBL expc2<>(SB), RODATA|NOPTR, $32
DATA expc3<>+0(SB)/4, $0x3d2aa9c1
DATA expc3<>+4(SB)/4, $0x3d2aa9c1
DATA expc3<>+8(SB)/4, $0x3d2aa9c1
DATA expc3<>+12(SB)/4, $0x3d2aa9c1
DATA expc3<>+16(SB)/4, $0x3d2aa9c1
DATA expc3<>+20(SB)/4, $0x3d2aa9c1
DATA expc3<>+24(SB)/4, $0x3d2aa9c1
DATA expc3<>+28(SB)/4, $0x3d2aa9c1
GLOBL expc3<>(SB), RODATA|NOPTR, $32
DATA expc4<>+0(SB)/4, $0x3e2aaaaa
DATA expc4<>+4(SB)/4, $0x3e2aaaaa
DATA expc4<>+8(SB)/4, $0x3e2aaaaa
DATA expc4<>+12(SB)/4, $0x3e2aaaaa
DATA expc4<>+16(SB)/4, $0x3e2aaaaa
DATA expc4<>+20(SB)/4, $0x3e2aaaaa
DATA expc4<>+24(SB)/4, $0x3e2aaaaa
DATA expc4<>+28(SB)/4, $0x3e2aaaaa
GLOBL expc4<>(SB), RODATA|NOPTR, $32
DATA expc5<>+0(SB)/4, $0x3f000000
DATA expc5<>+4(SB)/4, $0x3f000000
DATA expc5<>+8(SB)/4, $0x3f000000
DATA expc5<>+12(SB)/4, $0x3f000000
DATA expc5<>+16(SB)/4, $0x3f000000
DATA expc5<>+20(SB)/4, $0x3f000000
DATA expc5<>+24(SB)/4, $0x3f000000
DATA expc5<>+28(SB)/4, $0x3f000000
GLOBL expc5<>(SB), RODATA|NOPTR, $32
DATA expone<>+0(SB)/4, $0x3f800000
DATA expone<>+4(SB)/4, $0x3f800000
DATA expone<>+8(SB)/4, $0x3f800000
DATA expone<>+12(SB)/4, $0x3f800000
DATA expone<>+16(SB)/4, $0x3f800000
DATA expone<>+20(SB)/4, $0x3f800000
DATA expone<>+24(SB)/4, $0x3f800000
DATA expone<>+28(SB)/4, $0x3f800000
GLOBL expone<>(SB), RODATA|NOPTR, $32
DATA explow<>+0(SB)/4, $0xc2ae0000
DATA explow<>+4(SB)/4, $0xc2ae0000
DATA explow<>+8(SB)/4, $0xc2ae0000
DATA explow<>+12(SB)/4, $0xc2ae0000
DATA explow<>+16(SB)/4, $0xc2ae0000
DATA explow<>+20(SB)/4, $0xc2ae0000
DATA explow<>+24(SB)/4, $0xc2ae0000
DATA explow<>+28(SB)/4, $0xc2ae0000
GLOBL explow<>(SB), RODATA|NOPTR, $32
DATA expbias<>+0(SB)/4, $0x0000007f
DATA expbias<>+4(SB)/4, $0x0000007f
DATA expbias<>+8(SB)/4, $0x0000007f
DATA expbias<>+12(SB)/4, $0x0000007f
DATA expbias<>+16(SB)/4, $0x0000007f
DATA expbias<>+20(SB)/4, $0x0000007f
DATA expbias<>+24(SB)/4, $0x0000007f
DATA expbias<>+28(SB)/4, $0x0000007f
GLOBL expbias<>(SB), RODATA|NOPTR, $32
DATA expsign<>+0(SB)/4, $0x80000000
DATA expsign<>+4(SB)/4, $0x80000000
DATA expsign<>+8(SB)/4, $0x80000000
DATA expsign<>+12(SB)/4, $0x80000000
DATA expsign<>+16(SB)/4, $0x80000000
DATA expsign<>+20(SB)/4, $0x80000000
DATA expsign<>+24(SB)/4, $0x80000000
DATA expsign<>+28(SB)/4, $0x80000000
GLOBL expsign<>(SB), RODATA|NOPTR, $32
DATA exphi<>+0(SB)/4, $0x42ae0000
DATA exphi<>+4(SB)/4, $0x42ae0000
DATA exphi<>+8(SB)/4, $0x42ae0000
DATA exphi<>+12(SB)/4, $0x42ae0000
DATA exphi<>+16(SB)/4, $0x42ae0000
DATA exphi<>+20(SB)/4, $0x42ae0000
DATA exphi<>+24(SB)/4, $0x42ae0000
DATA exphi<>+28(SB)/4, $0x42ae0000
GLOBL exphi<>(SB), RODATA|NOPTR, $32

// func maxScaled256(s *float32, n int, scale float32) float32
//
// max(s[i]·scale) over n (a multiple of 8, ≥ 8) scores. The maximum is
// the same in any order (no NaN in scores), so this equals a scalar loop.
TEXT ·maxScaled256(SB), NOSPLIT, $0-28
	MOVQ         s+0(FP), SI
	MOVQ         n+8(FP), CX
	VBROADCASTSS scale+16(FP), Y15
	VMULPS       (SI), Y15, Y0
	ADDQ         $32, SI
	SUBQ         $8, CX
	JZ           maxdone

maxloop:
	VMULPS (SI), Y15, Y1
	VMAXPS Y1, Y0, Y0
	ADDQ   $32, SI
	SUBQ   $8, CX
	JNZ    maxloop

maxdone:
	VEXTRACTF128 $1, Y0, X1
	VMAXPS       X1, X0, X0
	VPERMILPS    $0x4e, X0, X1
	VMAXPS       X1, X0, X0
	VPERMILPS    $0xb1, X0, X1
	VMAXPS       X1, X0, X0
	VMOVSS       X0, ret+24(FP)
	VZEROUPPER
	RET

// func expShifted256(s *float32, n int, scale, mx float32, p *float32)
//
// p[i] = expCore(s[i]·scale − mx) where that is ≥ −87, else 0, for n (a
// multiple of 8) scores: runtime.expCore's operations one for one (each
// multiply and add rounded on its own, no FMA, as Go compiles it), so
// every value is bit-identical to the scalar loop's.
TEXT ·expShifted256(SB), NOSPLIT, $0-32
	MOVQ         s+0(FP), SI
	MOVQ         n+8(FP), CX
	VBROADCASTSS scale+16(FP), Y15
	VBROADCASTSS mx+20(FP), Y14
	MOVQ         p+24(FP), DI
	VMOVUPS      explow<>(SB), Y13
	VMOVUPS      explog2e<>(SB), Y12
	VMOVUPS      expround<>(SB), Y11
	VMOVUPS      expln2hi<>(SB), Y10
	VMOVUPS      expln2lo<>(SB), Y9
	VMOVUPS      expone<>(SB), Y8
	VMOVDQU      expbias<>(SB), Y7
	TESTQ        CX, CX
	JZ           expdone

exploop:
	VMULPS    (SI), Y15, Y0
	VSUBPS    Y14, Y0, Y0          // x = s·scale − mx
	VCMPPS    $0x1d, Y13, Y0, Y1   // x ≥ −87 (ordered)
	VMULPS    Y12, Y0, Y2
	VADDPS    Y11, Y2, Y2
	VSUBPS    Y11, Y2, Y2          // n = (x·log2e + round) − round
	VMULPS    Y10, Y2, Y3
	VSUBPS    Y3, Y0, Y3           // x − n·ln2hi
	VMULPS    Y9, Y2, Y4
	VSUBPS    Y4, Y3, Y3           // r = x − n·ln2hi − n·ln2lo
	VMULPS    expc0<>(SB), Y3, Y4
	VADDPS    expc1<>(SB), Y4, Y4
	VMULPS    Y3, Y4, Y4
	VADDPS    expc2<>(SB), Y4, Y4
	VMULPS    Y3, Y4, Y4
	VADDPS    expc3<>(SB), Y4, Y4
	VMULPS    Y3, Y4, Y4
	VADDPS    expc4<>(SB), Y4, Y4
	VMULPS    Y3, Y4, Y4
	VADDPS    expc5<>(SB), Y4, Y4
	VMULPS    Y3, Y4, Y4
	VMULPS    Y3, Y4, Y4
	VADDPS    Y3, Y4, Y4
	VADDPS    Y8, Y4, Y4           // p = ((A·r)·r + r) + 1
	VCVTTPS2DQ Y2, Y5
	VPADDD    Y7, Y5, Y5
	VPSLLD    $23, Y5, Y5          // 2^n
	VMULPS    Y5, Y4, Y4
	VANDPS    Y1, Y4, Y4
	VMOVUPS   Y4, (DI)
	ADDQ      $32, SI
	ADDQ      $32, DI
	SUBQ      $8, CX
	JNZ       exploop

expdone:
	VZEROUPPER
	RET

// func siluMul256(gate, up *float32, n int) int
//
// g[i] = g[i]/(1 + expCore(−g[i]))·u[i] for the leading chunks of 8 (n a
// multiple of 8) whose every g lies in (−87, 87); it stops before the
// first chunk with a g outside and returns how many it did (the caller
// runs that chunk's edges in Go). expCore and the divide are the scalar
// code's roundings one for one (division is correctly rounded in both).
TEXT ·siluMul256(SB), NOSPLIT, $0-32
	MOVQ    gate+0(FP), DI
	MOVQ    up+8(FP), SI
	MOVQ    n+16(FP), CX
	XORQ    AX, AX
	VMOVUPS explow<>(SB), Y13
	VMOVUPS exphi<>(SB), Y14
	VMOVUPS explog2e<>(SB), Y12
	VMOVUPS expround<>(SB), Y11
	VMOVUPS expln2hi<>(SB), Y10
	VMOVUPS expln2lo<>(SB), Y9
	VMOVUPS expone<>(SB), Y8
	VMOVDQU expbias<>(SB), Y7
	VMOVUPS expsign<>(SB), Y15
	CMPQ    AX, CX
	JGE     silu_done

siluloop:
	VMOVUPS   (DI)(AX*4), Y6       // x
	VCMPPS    $0x1e, Y13, Y6, Y1   // x > −87 (ordered)
	VCMPPS    $0x11, Y14, Y6, Y2   // x < 87 (ordered)
	VANDPS    Y2, Y1, Y1
	VMOVMSKPS Y1, BX
	CMPQ      BX, $0xff
	JNE       silu_done
	VXORPS    Y15, Y6, Y0          // −x
	VMULPS    Y12, Y0, Y2
	VADDPS    Y11, Y2, Y2
	VSUBPS    Y11, Y2, Y2          // n = (−x·log2e + round) − round
	VMULPS    Y10, Y2, Y3
	VSUBPS    Y3, Y0, Y3
	VMULPS    Y9, Y2, Y4
	VSUBPS    Y4, Y3, Y3           // r
	VMULPS    expc0<>(SB), Y3, Y4
	VADDPS    expc1<>(SB), Y4, Y4
	VMULPS    Y3, Y4, Y4
	VADDPS    expc2<>(SB), Y4, Y4
	VMULPS    Y3, Y4, Y4
	VADDPS    expc3<>(SB), Y4, Y4
	VMULPS    Y3, Y4, Y4
	VADDPS    expc4<>(SB), Y4, Y4
	VMULPS    Y3, Y4, Y4
	VADDPS    expc5<>(SB), Y4, Y4
	VMULPS    Y3, Y4, Y4
	VMULPS    Y3, Y4, Y4
	VADDPS    Y3, Y4, Y4
	VADDPS    Y8, Y4, Y4
	VCVTTPS2DQ Y2, Y5
	VPADDD    Y7, Y5, Y5
	VPSLLD    $23, Y5, Y5
	VMULPS    Y5, Y4, Y4           // e^−x
	VADDPS    Y8, Y4, Y4           // 1 + e^−x
	VDIVPS    Y4, Y6, Y6           // x / (1 + e^−x)
	VMULPS    (SI)(AX*4), Y6, Y6
	VMOVUPS   Y6, (DI)(AX*4)
	ADDQ      $8, AX
	CMPQ      AX, CX
	JLT       siluloop

silu_done:
	MOVQ AX, ret+24(FP)
	VZEROUPPER
	RET

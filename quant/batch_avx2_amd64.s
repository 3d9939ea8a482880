//go:build !noasm

#include "textflag.h"
#include "hsum_amd64.h"

// Multi-column AVX2 kernel for DotBatch with float activations: one Q4_0
// tile against four activation columns. Each group of a row is widened to
// floats once (q4f256 does that per column), then each column costs four
// FMAs against its activations and one by the group's scale.

// XCOL adds the widened group (Y1–Y4) times column x (at x+R12) times the
// group scale (Y6) into acc.
#define XCOL(x, acc) \
	VMULPS      (x)(R12*1), Y1, Y5; \
	VFMADD231PS 32(x)(R12*1), Y2, Y5; \
	VFMADD231PS 64(x)(R12*1), Y3, Y5; \
	VFMADD231PS 96(x)(R12*1), Y4, Y5; \
	VFMADD231PS Y6, Y5, acc

// YSTORE adds acc's sum into y_j[row] (y_j from the ys array at BX+yo).
#define YSTORE(acc, xacc, yo) \
	HSUM8(acc, xacc, X11); \
	MOVQ   yo(BX), R15; \
	VADDSS (R15)(R9*1), xacc, xacc; \
	VMOVSS xacc, (R15)(R9*1)

// func q4f256x4(sc, data *byte, rows, groups int, xs, ys *[4]*float32)
//
// xs[j] points at column j's activation from the tile's first column, ys[j]
// at its output from the tile's first row.
TEXT ·q4f256x4(SB), NOSPLIT, $32-48
	MOVQ         sc+0(FP), SI
	MOVQ         data+8(FP), DI
	MOVQ         rows+16(FP), CX
	MOVQ         groups+24(FP), R8
	MOVQ         xs+32(FP), BX
	MOVQ         0(BX), AX
	MOVQ         8(BX), DX
	MOVQ         16(BX), R11
	MOVQ         24(BX), R14
	MOVL         $15, R12
	VMOVD        R12, X15
	VPBROADCASTD X15, Y15
	MOVL         $8, R12
	VMOVD        R12, X14
	VPBROADCASTD X14, Y14
	VXORPS       Y0, Y0, Y0
	VMOVUPS      Y0, (SP)
	LEAQ         (R8)(R8*1), R10
	XORQ         R9, R9

x4row:
	CMPQ      R8, $8
	JNE       x4scpart
	VCVTPH2PS (SI), Y0
	VMOVUPS   Y0, (SP)
	JMP       x4scdone

x4scpart:
	XORQ BX, BX

x4scloop:
	MOVWLZX   (SI)(BX*2), R12
	VMOVD     R12, X0
	VCVTPH2PS X0, X0
	VMOVSS    X0, (SP)(BX*4)
	INCQ      BX
	CMPQ      BX, R8
	JLT       x4scloop

x4scdone:
	VXORPS Y7, Y7, Y7
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	XORQ   R12, R12
	MOVQ   SP, R13
	MOVQ   R8, BX

x4grp:
	VPMOVZXBD    (DI), Y1
	VPMOVZXBD    8(DI), Y2
	VPSRLD       $4, Y1, Y3
	VPSRLD       $4, Y2, Y4
	VPAND        Y15, Y1, Y1
	VPAND        Y15, Y2, Y2
	VPSUBD       Y14, Y1, Y1
	VPSUBD       Y14, Y2, Y2
	VPSUBD       Y14, Y3, Y3
	VPSUBD       Y14, Y4, Y4
	VCVTDQ2PS    Y1, Y1
	VCVTDQ2PS    Y2, Y2
	VCVTDQ2PS    Y3, Y3
	VCVTDQ2PS    Y4, Y4
	VBROADCASTSS (R13), Y6
	XCOL(AX, Y7)
	XCOL(DX, Y8)
	XCOL(R11, Y9)
	XCOL(R14, Y10)
	ADDQ         $16, DI
	SUBQ         $-128, R12
	ADDQ         $4, R13
	DECQ         BX
	JNZ          x4grp

	MOVQ ys+40(FP), BX
	YSTORE(Y7, X7, 0)
	YSTORE(Y8, X8, 8)
	YSTORE(Y9, X9, 16)
	YSTORE(Y10, X10, 24)
	ADDQ R10, SI
	ADDQ $4, R9
	DECQ CX
	JNZ  x4row
	VZEROUPPER
	RET

// Multi-column AVX-512 kernel with float activations, q4f512's loop with
// each group's nibbles mapped to floats once for four columns.

DATA xq4tab<>+0(SB)/4, $-8.0
DATA xq4tab<>+4(SB)/4, $-7.0
DATA xq4tab<>+8(SB)/4, $-6.0
DATA xq4tab<>+12(SB)/4, $-5.0
DATA xq4tab<>+16(SB)/4, $-4.0
DATA xq4tab<>+20(SB)/4, $-3.0
DATA xq4tab<>+24(SB)/4, $-2.0
DATA xq4tab<>+28(SB)/4, $-1.0
DATA xq4tab<>+32(SB)/4, $0.0
DATA xq4tab<>+36(SB)/4, $1.0
DATA xq4tab<>+40(SB)/4, $2.0
DATA xq4tab<>+44(SB)/4, $3.0
DATA xq4tab<>+48(SB)/4, $4.0
DATA xq4tab<>+52(SB)/4, $5.0
DATA xq4tab<>+56(SB)/4, $6.0
DATA xq4tab<>+60(SB)/4, $7.0
GLOBL xq4tab<>(SB), RODATA|NOPTR, $64

#define HSUM16X(z, y, x, yt, xt) \
	VEXTRACTF64X4 $1, z, yt; \
	VADDPS        yt, y, y;  \
	VEXTRACTF128  $1, y, xt; \
	VADDPS        xt, x, x;  \
	VPERMILPS     $0x4e, x, xt; \
	VADDPS        xt, x, x;  \
	VPERMILPS     $0xb1, x, xt; \
	VADDSS        xt, x, x

#define ZCOL(x, acc) \
	VMULPS           (x)(R12*1), Z1, Z3; \
	VFMADD231PS      64(x)(R12*1), Z2, Z3; \
	VFMADD231PS.BCST (R13), Z3, acc

#define ZSTORE(z, y, xacc, yo) \
	HSUM16X(z, y, xacc, Y12, X12); \
	MOVQ   yo(BX), R15; \
	VADDSS (R15)(R9*1), xacc, xacc; \
	VMOVSS xacc, (R15)(R9*1)

// func q4f512x4(sc, data *byte, rows, groups int, xs, ys *[4]*float32, kg int)
TEXT ·q4f512x4(SB), NOSPLIT, $32-56
	MOVQ    sc+0(FP), SI
	MOVQ    data+8(FP), DI
	MOVQ    rows+16(FP), CX
	MOVQ    groups+24(FP), R8
	MOVQ    xs+32(FP), BX
	MOVQ    0(BX), AX
	MOVQ    8(BX), DX
	MOVQ    16(BX), R11
	MOVQ    24(BX), R14
	MOVQ    kg+48(FP), R12
	KMOVW   R12, K3
	VMOVUPS xq4tab<>(SB), Z31
	LEAQ    (R8)(R8*1), R10
	XORQ    R9, R9

z4row:
	VCVTPH2PS.Z (SI), K3, Y0
	VMOVUPS     Y0, (SP)
	VXORPS      Z6, Z6, Z6
	VXORPS      Z7, Z7, Z7
	VXORPS      Z8, Z8, Z8
	VXORPS      Z9, Z9, Z9
	XORQ        R12, R12
	MOVQ        SP, R13
	MOVQ        R8, BX

z4grp:
	VPMOVZXBD (DI), Z1
	VPSRLD    $4, Z1, Z2
	VPERMPS   Z31, Z1, Z1
	VPERMPS   Z31, Z2, Z2
	ZCOL(AX, Z6)
	ZCOL(DX, Z7)
	ZCOL(R11, Z8)
	ZCOL(R14, Z9)
	ADDQ      $16, DI
	SUBQ      $-128, R12
	ADDQ      $4, R13
	DECQ      BX
	JNZ       z4grp

	MOVQ ys+40(FP), BX
	ZSTORE(Z6, Y6, X6, 0)
	ZSTORE(Z7, Y7, X7, 8)
	ZSTORE(Z8, Y8, X8, 16)
	ZSTORE(Z9, Y9, X9, 24)
	ADDQ R10, SI
	ADDQ $4, R9
	DECQ CX
	JNZ  z4row
	VZEROUPPER
	RET

// func q8f512x4(sc, data *byte, rows, groups int, xs, ys *[4]*float32, kg int)
//
// q4f512x4 for Q8_0: a group's 32 int8 weights sign-extended and converted
// once for four columns.
TEXT ·q8f512x4(SB), NOSPLIT, $32-56
	MOVQ    sc+0(FP), SI
	MOVQ    data+8(FP), DI
	MOVQ    rows+16(FP), CX
	MOVQ    groups+24(FP), R8
	MOVQ    xs+32(FP), BX
	MOVQ    0(BX), AX
	MOVQ    8(BX), DX
	MOVQ    16(BX), R11
	MOVQ    24(BX), R14
	MOVQ    kg+48(FP), R12
	KMOVW   R12, K3
	LEAQ    (R8)(R8*1), R10
	XORQ    R9, R9

z8row:
	VCVTPH2PS.Z (SI), K3, Y0
	VMOVUPS     Y0, (SP)
	VXORPS      Z6, Z6, Z6
	VXORPS      Z7, Z7, Z7
	VXORPS      Z8, Z8, Z8
	VXORPS      Z9, Z9, Z9
	XORQ        R12, R12
	MOVQ        SP, R13
	MOVQ        R8, BX

z8grp:
	VPMOVSXBD (DI), Z1
	VPMOVSXBD 16(DI), Z2
	VCVTDQ2PS Z1, Z1
	VCVTDQ2PS Z2, Z2
	ZCOL(AX, Z6)
	ZCOL(DX, Z7)
	ZCOL(R11, Z8)
	ZCOL(R14, Z9)
	ADDQ      $32, DI
	SUBQ      $-128, R12
	ADDQ      $4, R13
	DECQ      BX
	JNZ       z8grp

	MOVQ ys+40(FP), BX
	ZSTORE(Z6, Y6, X6, 0)
	ZSTORE(Z7, Y7, X7, 8)
	ZSTORE(Z8, Y8, X8, 16)
	ZSTORE(Z9, Y9, X9, 24)
	ADDQ R10, SI
	ADDQ $4, R9
	DECQ CX
	JNZ  z8row
	VZEROUPPER
	RET

// func q8f256x4(sc, data *byte, rows, groups int, xs, ys *[4]*float32)
//
// q4f256x4 for Q8_0.
TEXT ·q8f256x4(SB), NOSPLIT, $32-48
	MOVQ         sc+0(FP), SI
	MOVQ         data+8(FP), DI
	MOVQ         rows+16(FP), CX
	MOVQ         groups+24(FP), R8
	MOVQ         xs+32(FP), BX
	MOVQ         0(BX), AX
	MOVQ         8(BX), DX
	MOVQ         16(BX), R11
	MOVQ         24(BX), R14
	VXORPS       Y0, Y0, Y0
	VMOVUPS      Y0, (SP)
	LEAQ         (R8)(R8*1), R10
	XORQ         R9, R9

y8row:
	CMPQ      R8, $8
	JNE       y8scpart
	VCVTPH2PS (SI), Y0
	VMOVUPS   Y0, (SP)
	JMP       y8scdone

y8scpart:
	XORQ BX, BX

y8scloop:
	MOVWLZX   (SI)(BX*2), R12
	VMOVD     R12, X0
	VCVTPH2PS X0, X0
	VMOVSS    X0, (SP)(BX*4)
	INCQ      BX
	CMPQ      BX, R8
	JLT       y8scloop

y8scdone:
	VXORPS Y7, Y7, Y7
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	XORQ   R12, R12
	MOVQ   SP, R13
	MOVQ   R8, BX

y8grp:
	VPMOVSXBD    (DI), Y1
	VPMOVSXBD    8(DI), Y2
	VPMOVSXBD    16(DI), Y3
	VPMOVSXBD    24(DI), Y4
	VCVTDQ2PS    Y1, Y1
	VCVTDQ2PS    Y2, Y2
	VCVTDQ2PS    Y3, Y3
	VCVTDQ2PS    Y4, Y4
	VBROADCASTSS (R13), Y6
	XCOL(AX, Y7)
	XCOL(DX, Y8)
	XCOL(R11, Y9)
	XCOL(R14, Y10)
	ADDQ         $32, DI
	SUBQ         $-128, R12
	ADDQ         $4, R13
	DECQ         BX
	JNZ          y8grp

	MOVQ ys+40(FP), BX
	YSTORE(Y7, X7, 0)
	YSTORE(Y8, X8, 8)
	YSTORE(Y9, X9, 16)
	YSTORE(Y10, X10, 24)
	ADDQ R10, SI
	ADDQ $4, R9
	DECQ CX
	JNZ  y8row
	VZEROUPPER
	RET

//go:build claim2 && !noasm

#include "textflag.h"

// q4f256wide is q4f256's inner loop (AVX2+FMA+F16C, float activations)
// for rows of any width: it converts each group's f16 scale as it reaches
// it instead of staging a tile row's eight scales on the stack, so one call
// can walk a matrix stored row-major across its full width (Claim 2's
// row-major baseline; see rowmajor_amd64.go).

#define HSUM8W(y, x, xt) \
	VEXTRACTF128 $1, y, xt; \
	VADDPS       xt, x, x;  \
	VPERMILPS    $0x4e, x, xt; \
	VADDPS       xt, x, x;  \
	VPERMILPS    $0xb1, x, xt; \
	VADDSS       xt, x, x

// func q4f256wide(sc, data *byte, rows, groups int, x, y *float32)
TEXT ·q4f256wide(SB), NOSPLIT, $0-48
	MOVQ         sc+0(FP), SI
	MOVQ         data+8(FP), DI
	MOVQ         rows+16(FP), CX
	MOVQ         groups+24(FP), R8
	MOVQ         x+32(FP), R14
	MOVQ         y+40(FP), R9
	MOVL         $15, AX
	VMOVD        AX, X15
	VPBROADCASTD X15, Y15
	MOVL         $8, AX
	VMOVD        AX, X14
	VPBROADCASTD X14, Y14

wrow:
	VXORPS Y7, Y7, Y7
	MOVQ   R14, R12
	MOVQ   R8, BX

wgrp:
	MOVWLZX      (SI), AX
	VMOVD        AX, X0
	VCVTPH2PS    X0, X0
	VBROADCASTSS X0, Y6
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
	VMULPS       (R12), Y1, Y5
	VFMADD231PS  32(R12), Y2, Y5
	VFMADD231PS  64(R12), Y3, Y5
	VFMADD231PS  96(R12), Y4, Y5
	VFMADD231PS  Y6, Y5, Y7
	ADDQ         $16, DI
	SUBQ         $-128, R12
	ADDQ         $2, SI
	DECQ         BX
	JNZ          wgrp

	HSUM8W(Y7, X7, X8)
	VADDSS (R9), X7, X7
	VMOVSS X7, (R9)
	ADDQ   $4, R9
	DECQ   CX
	JNZ    wrow
	VZEROUPPER
	RET

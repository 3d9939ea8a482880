//go:build !noasm

#include "textflag.h"

// HSUM8R is kernels_avx2_amd64.s's HSUM8: the same adds in the same order,
// so a row's sum here is bit-identical to f32f256's.
#define HSUM8R(y, x, xt) \
	VEXTRACTF128 $1, y, xt; \
	VADDPS       xt, x, x;  \
	VPERMILPS    $0x4e, x, xt; \
	VADDPS       xt, x, x;  \
	VPERMILPS    $0xb1, x, xt; \
	VADDSS       xt, x, x

// rowsmask: the 8 dwords at rowsmask+4·(8−t) have their first t lanes set.
DATA rowsmask<>+0(SB)/4, $-1
DATA rowsmask<>+4(SB)/4, $-1
DATA rowsmask<>+8(SB)/4, $-1
DATA rowsmask<>+12(SB)/4, $-1
DATA rowsmask<>+16(SB)/4, $-1
DATA rowsmask<>+20(SB)/4, $-1
DATA rowsmask<>+24(SB)/4, $-1
DATA rowsmask<>+28(SB)/4, $-1
DATA rowsmask<>+32(SB)/4, $0
DATA rowsmask<>+36(SB)/4, $0
DATA rowsmask<>+40(SB)/4, $0
DATA rowsmask<>+44(SB)/4, $0
DATA rowsmask<>+48(SB)/4, $0
DATA rowsmask<>+52(SB)/4, $0
DATA rowsmask<>+56(SB)/4, $0
DATA rowsmask<>+60(SB)/4, $0
GLOBL rowsmask<>(SB), RODATA|NOPTR, $64

// func f32rows256(w *float32, rows, cols, wstride int, x *float32, xstride, nx int, y *float32, ystride int)
//
// Strides in bytes. For each row, every vector's dot product with it runs
// f32f256's loop (even 8-float chunks into Y6, odd ones and the masked
// tail into Y7, Y6+Y7 reduced by HSUM8, added to y): the row is read from
// memory once and from L1 for the other vectors.
TEXT ·f32rows256(SB), NOSPLIT, $0-72
	MOVQ    w+0(FP), DX
	MOVQ    rows+8(FP), CX
	MOVQ    cols+16(FP), R8
	MOVQ    x+32(FP), R14
	MOVQ    y+56(FP), R9
	MOVQ    R8, R10
	SHRQ    $3, R10            // full 8-float chunks per row
	MOVQ    R8, R11
	ANDQ    $7, R11
	SHLQ    $2, R11            // tail bytes
	LEAQ    rowsmask<>+32(SB), AX
	SUBQ    R11, AX
	VMOVDQU (AX), Y13          // lanes < tail set
	MOVQ    wstride+24(FP), R8

f32rowsrow:
	MOVQ R14, SI               // vector 0
	MOVQ R9, R13               // its output for this row
	MOVQ nx+48(FP), R15

f32rowsvec:
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	MOVQ   DX, DI
	MOVQ   SI, R12
	MOVQ   R10, BX
	CMPQ   BX, $2
	JLT    f32rowsone

f32rowstwo:
	VMOVUPS     (R12), Y1
	VMOVUPS     32(R12), Y2
	VFMADD231PS (DI), Y1, Y6
	VFMADD231PS 32(DI), Y2, Y7
	ADDQ        $64, DI
	ADDQ        $64, R12
	SUBQ        $2, BX
	CMPQ        BX, $2
	JGE         f32rowstwo

f32rowsone:
	TESTQ       BX, BX
	JZ          f32rowstail
	VMOVUPS     (R12), Y1
	VFMADD231PS (DI), Y1, Y6
	ADDQ        $32, DI
	ADDQ        $32, R12

f32rowstail:
	TESTQ       R11, R11
	JZ          f32rowssum
	VMASKMOVPS  (DI), Y13, Y2
	VMASKMOVPS  (R12), Y13, Y1
	VFMADD231PS Y2, Y1, Y7

f32rowssum:
	VADDPS Y7, Y6, Y6
	HSUM8R(Y6, X6, X7)
	VADDSS (R13), X6, X6
	VMOVSS X6, (R13)
	ADDQ   xstride+40(FP), SI
	ADDQ   ystride+64(FP), R13
	DECQ   R15
	JNZ    f32rowsvec

	ADDQ $4, R9
	ADDQ R8, DX
	DECQ CX
	JNZ  f32rowsrow
	VZEROUPPER
	RET

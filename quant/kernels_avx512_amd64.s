//go:build !noasm

#include "textflag.h"

// AVX-512 tile kernels. See kernels_amd64.go for the Go signatures and
// docs/PERFORMANCE.md ("Kernels") for the design and measurements.

// HSUM16 reduces the 16 floats of z (whose low halves are y and x) into the
// low lane of x, using yt/xt as scratch.
#define HSUM16(z, y, x, yt, xt) \
	VEXTRACTF64X4 $1, z, yt; \
	VADDPS        yt, y, y;  \
	VEXTRACTF128  $1, y, xt; \
	VADDPS        xt, x, x;  \
	VPERMILPS     $0x4e, x, xt; \
	VADDPS        xt, x, x;  \
	VPERMILPS     $0xb1, x, xt; \
	VADDSS        xt, x, x

// q4tab maps a nibble q to the float q−8 through VPERMPS, which reads only
// the low four bits of each index lane: one instruction per 16 weights.
DATA q4tab<>+0(SB)/4, $-8.0
DATA q4tab<>+4(SB)/4, $-7.0
DATA q4tab<>+8(SB)/4, $-6.0
DATA q4tab<>+12(SB)/4, $-5.0
DATA q4tab<>+16(SB)/4, $-4.0
DATA q4tab<>+20(SB)/4, $-3.0
DATA q4tab<>+24(SB)/4, $-2.0
DATA q4tab<>+28(SB)/4, $-1.0
DATA q4tab<>+32(SB)/4, $0.0
DATA q4tab<>+36(SB)/4, $1.0
DATA q4tab<>+40(SB)/4, $2.0
DATA q4tab<>+44(SB)/4, $3.0
DATA q4tab<>+48(SB)/4, $4.0
DATA q4tab<>+52(SB)/4, $5.0
DATA q4tab<>+56(SB)/4, $6.0
DATA q4tab<>+60(SB)/4, $7.0
GLOBL q4tab<>(SB), RODATA|NOPTR, $64

// func f32f512(w *byte, rows, cols int, x, y *float32, ktail int)
TEXT ·f32f512(SB), NOSPLIT, $0-48
	MOVQ  w+0(FP), DI
	MOVQ  rows+8(FP), CX
	MOVQ  cols+16(FP), R8
	MOVQ  x+24(FP), R14
	MOVQ  y+32(FP), R9
	MOVQ ktail+40(FP), AX
	KMOVW AX, K1
	MOVQ  R8, R10
	SHRQ  $4, R10              // full 16-float chunks per row
	MOVQ  R8, R11
	ANDQ  $15, R11
	SHLQ  $2, R11              // tail bytes

f32f512row:
	VXORPS Z6, Z6, Z6
	VXORPS Z7, Z7, Z7
	MOVQ   R14, R12
	MOVQ   R10, BX
	CMPQ   BX, $2
	JLT    f32f512one

f32f512two:
	VMOVUPS     (R12), Z1
	VMOVUPS     64(R12), Z2
	VFMADD231PS (DI), Z1, Z6
	VFMADD231PS 64(DI), Z2, Z7
	ADDQ        $128, DI
	ADDQ        $128, R12
	SUBQ        $2, BX
	CMPQ        BX, $2
	JGE         f32f512two

f32f512one:
	TESTQ       BX, BX
	JZ          f32f512tail
	VMOVUPS     (R12), Z1
	VFMADD231PS (DI), Z1, Z6
	ADDQ        $64, DI
	ADDQ        $64, R12

f32f512tail:
	TESTQ       R11, R11
	JZ          f32f512sum
	VMOVUPS.Z   (R12), K1, Z1
	VMOVUPS.Z   (DI), K1, Z2
	VFMADD231PS Z2, Z1, Z7
	ADDQ        R11, DI

f32f512sum:
	VADDPS Z7, Z6, Z6
	HSUM16(Z6, Y6, X6, Y7, X7)
	VADDSS (R9), X6, X6
	VMOVSS X6, (R9)
	ADDQ   $4, R9
	DECQ   CX
	JNZ    f32f512row
	VZEROUPPER
	RET

// func q4f512(sc, data *byte, rows, groups int, x, y *float32, kg int)
//
// Per group: zero-extend 16 nibble bytes to dwords, VPERMPS through q4tab
// for the low nibbles, shift by 4 and VPERMPS again for the high ones, two
// FMAs against x, then one FMA with the group's scale broadcast from the
// row's converted scales (kept in the frame).
TEXT ·q4f512(SB), NOSPLIT, $32-56
	MOVQ    sc+0(FP), SI
	MOVQ    data+8(FP), DI
	MOVQ    rows+16(FP), CX
	MOVQ    groups+24(FP), R8
	MOVQ    x+32(FP), R14
	MOVQ    y+40(FP), R9
	MOVQ   kg+48(FP), AX
	KMOVW   AX, K3
	VMOVUPS q4tab<>(SB), Z31
	LEAQ    (R8)(R8*1), R10

q4f512row:
	VCVTPH2PS.Z (SI), K3, Y0
	VMOVUPS     Y0, (SP)
	VXORPS      Z6, Z6, Z6
	MOVQ        R14, R12
	MOVQ        SP, R13
	MOVQ        R8, BX

q4f512grp:
	VPMOVZXBD        (DI), Z1
	VPSRLD           $4, Z1, Z2
	VPERMPS          Z31, Z1, Z1
	VPERMPS          Z31, Z2, Z2
	VMULPS           (R12), Z1, Z3
	VFMADD231PS      64(R12), Z2, Z3
	VFMADD231PS.BCST (R13), Z3, Z6
	ADDQ             $16, DI
	SUBQ             $-128, R12
	ADDQ             $4, R13
	DECQ             BX
	JNZ              q4f512grp

	HSUM16(Z6, Y6, X6, Y7, X7)
	VADDSS (R9), X6, X6
	VMOVSS X6, (R9)
	ADDQ   R10, SI
	ADDQ   $4, R9
	DECQ   CX
	JNZ    q4f512row
	VZEROUPPER
	RET

// func q8f512(sc, data *byte, rows, groups int, x, y *float32, kg int)
TEXT ·q8f512(SB), NOSPLIT, $32-56
	MOVQ  sc+0(FP), SI
	MOVQ  data+8(FP), DI
	MOVQ  rows+16(FP), CX
	MOVQ  groups+24(FP), R8
	MOVQ  x+32(FP), R14
	MOVQ  y+40(FP), R9
	MOVQ kg+48(FP), AX
	KMOVW AX, K3
	LEAQ  (R8)(R8*1), R10

q8f512row:
	VCVTPH2PS.Z (SI), K3, Y0
	VMOVUPS     Y0, (SP)
	VXORPS      Z6, Z6, Z6
	MOVQ        R14, R12
	MOVQ        SP, R13
	MOVQ        R8, BX

q8f512grp:
	VPMOVSXBD        (DI), Z1
	VPMOVSXBD        16(DI), Z2
	VCVTDQ2PS        Z1, Z1
	VCVTDQ2PS        Z2, Z2
	VMULPS           (R12), Z1, Z3
	VFMADD231PS      64(R12), Z2, Z3
	VFMADD231PS.BCST (R13), Z3, Z6
	ADDQ             $32, DI
	SUBQ             $-128, R12
	ADDQ             $4, R13
	DECQ             BX
	JNZ              q8f512grp

	HSUM16(Z6, Y6, X6, Y7, X7)
	VADDSS (R9), X6, X6
	VMOVSS X6, (R9)
	ADDQ   R10, SI
	ADDQ   $4, R9
	DECQ   CX
	JNZ    q8f512row
	VZEROUPPER
	RET

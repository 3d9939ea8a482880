//go:build !noasm

#include "textflag.h"

// Multi-column AVX-512 VNNI kernels for DotBatch: one Q4_0 or Q8_0 tile
// against four prepared int8 activation columns at once (and, for the
// vnnipair path's last columns of a batch, two or three). Each weight row is loaded and
// split into nibbles once for all four columns (the single-column kernel
// does that per column), and four rows × four columns of accumulators are
// reduced together, sixteen sums in one tree. Activations are memory
// operands (each column's 64-byte blocks sit in L1 across the tile's rows).

DATA idx4a<>+0(SB)/4, $0
DATA idx4a<>+4(SB)/4, $0
DATA idx4a<>+8(SB)/4, $0
DATA idx4a<>+12(SB)/4, $0
DATA idx4a<>+16(SB)/4, $1
DATA idx4a<>+20(SB)/4, $1
DATA idx4a<>+24(SB)/4, $1
DATA idx4a<>+28(SB)/4, $1
DATA idx4a<>+32(SB)/4, $2
DATA idx4a<>+36(SB)/4, $2
DATA idx4a<>+40(SB)/4, $2
DATA idx4a<>+44(SB)/4, $2
DATA idx4a<>+48(SB)/4, $3
DATA idx4a<>+52(SB)/4, $3
DATA idx4a<>+56(SB)/4, $3
DATA idx4a<>+60(SB)/4, $3
GLOBL idx4a<>(SB), RODATA|NOPTR, $64

DATA idx4b<>+0(SB)/4, $4
DATA idx4b<>+4(SB)/4, $4
DATA idx4b<>+8(SB)/4, $4
DATA idx4b<>+12(SB)/4, $4
DATA idx4b<>+16(SB)/4, $5
DATA idx4b<>+20(SB)/4, $5
DATA idx4b<>+24(SB)/4, $5
DATA idx4b<>+28(SB)/4, $5
DATA idx4b<>+32(SB)/4, $6
DATA idx4b<>+36(SB)/4, $6
DATA idx4b<>+40(SB)/4, $6
DATA idx4b<>+44(SB)/4, $6
DATA idx4b<>+48(SB)/4, $7
DATA idx4b<>+52(SB)/4, $7
DATA idx4b<>+56(SB)/4, $7
DATA idx4b<>+60(SB)/4, $7
GLOBL idx4b<>(SB), RODATA|NOPTR, $64

// idx80..idx83: eight lanes per group, groups (0,1), (2,3), (4,5), (6,7).
#define IDX8(name, a, b) \
	DATA name+0(SB)/4, $a;  DATA name+4(SB)/4, $a;  DATA name+8(SB)/4, $a;  DATA name+12(SB)/4, $a; \
	DATA name+16(SB)/4, $a; DATA name+20(SB)/4, $a; DATA name+24(SB)/4, $a; DATA name+28(SB)/4, $a; \
	DATA name+32(SB)/4, $b; DATA name+36(SB)/4, $b; DATA name+40(SB)/4, $b; DATA name+44(SB)/4, $b; \
	DATA name+48(SB)/4, $b; DATA name+52(SB)/4, $b; DATA name+56(SB)/4, $b; DATA name+60(SB)/4, $b; \
	GLOBL name(SB), RODATA|NOPTR, $64

IDX8(xidx80<>, 0, 1)
IDX8(xidx81<>, 2, 3)
IDX8(xidx82<>, 4, 5)
IDX8(xidx83<>, 6, 7)

// The reduction tree of kernels_vnni_amd64.s (RED1..RED4, then rowperm),
// with scratch Z24, Z25: sixteen accumulators n = 0..15 become one vector
// whose lane n holds accumulator n's sum.
#define XRED1(a, b) VSHUFF64X2 $0x44, b, a, Z24; VSHUFF64X2 $0xee, b, a, Z25; VADDPS Z25, Z24, a
#define XRED2(a, b) VSHUFF64X2 $0x88, b, a, Z24; VSHUFF64X2 $0xdd, b, a, Z25; VADDPS Z25, Z24, a
#define XRED3(a, b) VSHUFPS $0x44, b, a, Z24; VSHUFPS $0xee, b, a, Z25; VADDPS Z25, Z24, a
#define XRED4(a, b) VSHUFPS $0x88, b, a, Z24; VSHUFPS $0xdd, b, a, Z25; VADDPS Z25, Z24, a

// XTREE reduces the sixteen accumulators Z8–Z23 (n = register − 8) into Z8,
// lane n holding accumulator n's sum; perm holds xrowperm.
#define XTREE(perm) \
	XRED1(Z8, Z9); XRED1(Z10, Z11); XRED1(Z12, Z13); XRED1(Z14, Z15); \
	XRED1(Z16, Z17); XRED1(Z18, Z19); XRED1(Z20, Z21); XRED1(Z22, Z23); \
	XRED2(Z8, Z10); XRED2(Z12, Z14); XRED2(Z16, Z18); XRED2(Z20, Z22); \
	XRED3(Z8, Z12); XRED3(Z16, Z20); \
	XRED4(Z8, Z16); \
	VPERMPS Z8, perm, Z8

DATA xrowperm<>+0(SB)/4, $0
DATA xrowperm<>+4(SB)/4, $4
DATA xrowperm<>+8(SB)/4, $8
DATA xrowperm<>+12(SB)/4, $12
DATA xrowperm<>+16(SB)/4, $1
DATA xrowperm<>+20(SB)/4, $5
DATA xrowperm<>+24(SB)/4, $9
DATA xrowperm<>+28(SB)/4, $13
DATA xrowperm<>+32(SB)/4, $2
DATA xrowperm<>+36(SB)/4, $6
DATA xrowperm<>+40(SB)/4, $10
DATA xrowperm<>+44(SB)/4, $14
DATA xrowperm<>+48(SB)/4, $3
DATA xrowperm<>+52(SB)/4, $7
DATA xrowperm<>+56(SB)/4, $11
DATA xrowperm<>+60(SB)/4, $15
GLOBL xrowperm<>(SB), RODATA|NOPTR, $64

// LOADROW: the row's scales (Y0, zero past the tile's groups) and its
// nibbles, groups 0–3 low/high in Z3/Z4 and 4–7 in Z5/Z6; advances SI, DI.
// Prefetches as the single-column kernel's Q4ROW.
#define LOADROW \
	PREFETCHT0  2048(DI); \
	PREFETCHT0  2112(DI); \
	PREFETCHT1  8192(DI); \
	PREFETCHT1  8256(DI); \
	VCVTPH2PS.Z (SI), K3, Y0; \
	VMOVDQU32.Z (DI), K1, Z3; \
	VPSRLW      $4, Z3, Z4; \
	VPANDD      Z31, Z3, Z3; \
	VPANDD      Z31, Z4, Z4; \
	VMOVDQU32.Z 64(DI), K2, Z5; \
	VPSRLW      $4, Z5, Z6; \
	VPANDD      Z31, Z5, Z5; \
	VPANDD      Z31, Z6, Z6; \
	ADDQ        R10, SI; \
	ADDQ        R11, DI

// COL adds the loaded row times one column (its vnniCol at BX+xl…) into
// acc: per block the −8·Σx bias, two VPDPBUSD against the column's int8
// halves, converted and scaled per lane by row scale × column scale.
#define COL(xlo, xho, c4o, dxo, acc) \
	MOVQ        dxo(BX), AX; \
	VMULPS      (AX), Y0, Y2; \
	VPERMPS     Z2, Z28, Z1; \
	VPERMPS     Z2, Z27, Z2; \
	MOVQ        c4o(BX), AX; \
	MOVQ        xlo(BX), DX; \
	MOVQ        xho(BX), R12; \
	VMOVDQU32.Z (AX), K1, Z7; \
	VPDPBUSD    (DX), Z3, Z7; \
	VPDPBUSD    (R12), Z4, Z7; \
	VCVTDQ2PS   Z7, Z7; \
	VMULPS      Z2, Z7, acc; \
	VMOVDQU32.Z 64(AX), K2, Z7; \
	VPDPBUSD    64(DX), Z5, Z7; \
	VPDPBUSD    64(R12), Z6, Z7; \
	VCVTDQ2PS   Z7, Z7; \
	VFMADD231PS Z1, Z7, acc

// ROW2, ROW3 and ROW4 run LOADROW and two, three or four columns, the
// accumulator of column j being aj (column j's vnniCol at 40j(BX)).
#define ROW2(a0, a1) \
	LOADROW; \
	COL(0, 8, 16, 24, a0); \
	COL(40, 48, 56, 64, a1)

#define ROW3(a0, a1, a2) \
	ROW2(a0, a1); \
	COL(80, 88, 96, 104, a2)

#define ROW4(a0, a1, a2, a3) \
	ROW3(a0, a1, a2); \
	COL(120, 128, 136, 144, a3)

// STORE adds lanes 4j..4j+3 of Z8 (column j's four rows) into y_j at R9.
#define STORE(lane, yo) \
	VEXTRACTF32X4 $lane, Z8, X24; \
	MOVQ          yo(BX), AX; \
	VADDPS        (AX)(R9*1), X24, X24; \
	VMOVUPS       X24, (AX)(R9*1)

// STORE8R adds lanes 8j..8j+7 of Z8 (column j's eight rows) into y_j at R9.
#define STORE8R(half, yo) \
	VEXTRACTF64X4 $half, Z8, Y24; \
	MOVQ          yo(BX), AX; \
	VADDPS        (AX)(R9*1), Y24, Y24; \
	VMOVUPS       Y24, (AX)(R9*1)

// XARGS loads the arguments every multi-column vnni kernel takes first
// (sc, data, rows, groups, cols, and masks k0, k1 into K1, K2). The
// prologues are defined here, before the first TEXT, for go vet's
// frame-offset check.
#define XARGS \
	MOVQ         sc+0(FP), SI; \
	MOVQ         data+8(FP), DI; \
	MOVQ         rows+16(FP), CX; \
	MOVQ         groups+24(FP), R8; \
	MOVQ         cols+32(FP), BX; \
	MOVQ         k0+40(FP), AX; \
	KMOVW        AX, K1; \
	MOVQ         k1+48(FP), AX; \
	KMOVW        AX, K2

// XPROLOGUE loads q4vnni512x{2,3,4}'s arguments and constants.
#define XPROLOGUE \
	XARGS; \
	MOVQ         kg+56(FP), AX; \
	KMOVW        AX, K3; \
	MOVL         $0x0f0f0f0f, AX; \
	VPBROADCASTD AX, Z31; \
	VMOVDQU32    idx4a<>(SB), Z27; \
	VMOVDQU32    idx4b<>(SB), Z28; \
	VMOVDQU32    xrowperm<>(SB), Z29; \
	LEAQ         (R8)(R8*1), R10; \
	MOVQ         R8, R11; \
	SHLQ         $4, R11; \
	XORQ         R9, R9

// X8PROLOGUE loads q8vnni512x{2,3,4}'s arguments and constants.
#define X8PROLOGUE \
	XARGS; \
	MOVQ         k2+56(FP), AX; \
	KMOVW        AX, K4; \
	MOVQ         k3+64(FP), AX; \
	KMOVW        AX, K5; \
	MOVQ         kg+72(FP), AX; \
	KMOVW        AX, K3; \
	MOVL         $0x80808080, AX; \
	VPBROADCASTD AX, Z31; \
	VMOVDQU32    xidx80<>(SB), Z27; \
	VMOVDQU32    xidx81<>(SB), Z28; \
	VMOVDQU32    xidx82<>(SB), Z29; \
	VMOVDQU32    xidx83<>(SB), Z30; \
	VMOVDQU32    xrowperm<>(SB), Z26; \
	LEAQ         (R8)(R8*1), R10; \
	MOVQ         R8, R11; \
	SHLQ         $5, R11; \
	XORQ         R9, R9

// func q4vnni512x2(sc, data *byte, rows, groups int, cols *[2]vnniCol, k0, k1, kg int)
//
// q4vnni512x4 for two columns: eight rows × two columns fill the sixteen
// accumulators (column j's row r in Z8+8j+r), so rows must be a positive
// multiple of 8. Each column's sums go through COL and XTREE as in
// q4vnni512x4, so they keep Dot's bits.
TEXT ·q4vnni512x2(SB), NOSPLIT, $0-64
	XPROLOGUE

x2loop:
	ROW2(Z8, Z16)
	ROW2(Z9, Z17)
	ROW2(Z10, Z18)
	ROW2(Z11, Z19)
	ROW2(Z12, Z20)
	ROW2(Z13, Z21)
	ROW2(Z14, Z22)
	ROW2(Z15, Z23)
	XTREE(Z29)
	STORE8R(0, 32)
	STORE8R(1, 72)
	ADDQ         $32, R9
	SUBQ         $8, CX
	JNZ          x2loop
	VZEROUPPER
	RET

// func q4vnni512x3(sc, data *byte, rows, groups int, cols *[3]vnniCol, k0, k1, kg int)
//
// q4vnni512x4 without its fourth column: Z20–Z23, zeroed once, stay zero
// through the tree (lanes 12–15, not stored). rows must be a positive
// multiple of 4.
TEXT ·q4vnni512x3(SB), NOSPLIT, $0-64
	XPROLOGUE
	VPXORD       Z20, Z20, Z20
	VPXORD       Z21, Z21, Z21
	VPXORD       Z22, Z22, Z22
	VPXORD       Z23, Z23, Z23

x3loop:
	ROW3(Z8, Z12, Z16)
	ROW3(Z9, Z13, Z17)
	ROW3(Z10, Z14, Z18)
	ROW3(Z11, Z15, Z19)
	XTREE(Z29)
	STORE(0, 32)
	STORE(1, 72)
	STORE(2, 112)
	ADDQ         $16, R9
	SUBQ         $4, CX
	JNZ          x3loop
	VZEROUPPER
	RET

// func q4vnni512x4(sc, data *byte, rows, groups int, cols *[4]vnniCol, k0, k1, kg int)
//
// rows must be a positive multiple of 4; vnniCol is {xl, xh, c4, dx, y}
// (40 bytes), pointers already offset to the tile's first group and row.
TEXT ·q4vnni512x4(SB), NOSPLIT, $0-64
	XPROLOGUE

x4loop:
	ROW4(Z8, Z12, Z16, Z20)
	ROW4(Z9, Z13, Z17, Z21)
	ROW4(Z10, Z14, Z18, Z22)
	ROW4(Z11, Z15, Z19, Z23)
	XTREE(Z29)
	STORE(0, 32)
	STORE(1, 72)
	STORE(2, 112)
	STORE(3, 152)
	ADDQ         $16, R9
	SUBQ         $4, CX
	JNZ          x4loop
	VZEROUPPER
	RET

// Q8 four-column kernel: the same shape with Q8_0 rows (four 64-byte
// blocks of two groups, weights made unsigned by flipping the sign bit,
// the −128·Σx bias lanes undoing it). Z3–Z6 hold the row's blocks, Z27–Z30
// the group → lane maps, Z26 the lane order of the reduced sums.

#define LOADROW8 \
	PREFETCHT0  2048(DI); \
	PREFETCHT0  2112(DI); \
	PREFETCHT0  2176(DI); \
	PREFETCHT0  2240(DI); \
	VCVTPH2PS.Z (SI), K3, Y0; \
	VMOVDQU32.Z (DI), K1, Z3; \
	VMOVDQU32.Z 64(DI), K2, Z4; \
	VMOVDQU32.Z 128(DI), K4, Z5; \
	VMOVDQU32.Z 192(DI), K5, Z6; \
	VPXORD      Z31, Z3, Z3; \
	VPXORD      Z31, Z4, Z4; \
	VPXORD      Z31, Z5, Z5; \
	VPXORD      Z31, Z6, Z6; \
	ADDQ        R10, SI; \
	ADDQ        R11, DI

// BLK8 adds one block (two groups) of the row times the column: the bias
// lanes (masked like the weights), VPDPBUSD against the column's int8
// values, converted, scaled by the block's expanded scales (from Z2).
#define BLK8(off, k, w, idx, acc) \
	VMOVDQU32.Z off(AX), k, Z7; \
	VPDPBUSD    off(DX), w, Z7; \
	VCVTDQ2PS   Z7, Z7; \
	VPERMPS     Z2, idx, Z1; \
	VFMADD231PS Z1, Z7, acc

// COL8: x8 at +0 of the column's record, c8 at +8, dx at +16.
#define COL8(xo, co, dxo, acc) \
	MOVQ        dxo(BX), AX; \
	VMULPS      (AX), Y0, Y2; \
	MOVQ        co(BX), AX; \
	MOVQ        xo(BX), DX; \
	VMOVDQU32.Z (AX), K1, Z7; \
	VPDPBUSD    (DX), Z3, Z7; \
	VCVTDQ2PS   Z7, Z7; \
	VPERMPS     Z2, Z27, Z1; \
	VMULPS      Z1, Z7, acc; \
	BLK8(64, K2, Z4, Z28, acc); \
	BLK8(128, K4, Z5, Z29, acc); \
	BLK8(192, K5, Z6, Z30, acc)

// ROW8X2, ROW8X3 and ROW8X4 run LOADROW8 and two, three or four
// columns, the accumulator of column j being aj (column j's vnniCol8 at
// 32j(BX)); as ROW2..ROW4, each adds a column to the one before.
#define ROW8X2(a0, a1) \
	LOADROW8; \
	COL8(0, 8, 16, a0); \
	COL8(32, 40, 48, a1)

#define ROW8X3(a0, a1, a2) \
	ROW8X2(a0, a1); \
	COL8(64, 72, 80, a2)

#define ROW8X4(a0, a1, a2, a3) \
	ROW8X3(a0, a1, a2); \
	COL8(96, 104, 112, a3)

// STORE8 is STORE for the Q8 records (y at +24).
#define STORE8(lane, yo) \
	VEXTRACTF32X4 $lane, Z8, X24; \
	MOVQ          yo(BX), AX; \
	VADDPS        (AX)(R9*1), X24, X24; \
	VMOVUPS       X24, (AX)(R9*1)

// func q8vnni512x2(sc, data *byte, rows, groups int, cols *[2]vnniCol8, k0, k1, k2, k3, kg int)
//
// q8vnni512x4 for two columns, as q4vnni512x2 is for Q4: eight rows × two
// columns fill the sixteen accumulators (column j's row r in Z8+8j+r), so
// rows must be a positive multiple of 8. Each column's sums go through
// COL8 and XTREE as in q8vnni512x4, so they keep Dot's bits.
TEXT ·q8vnni512x2(SB), NOSPLIT, $0-80
	X8PROLOGUE

x8x2loop:
	ROW8X2(Z8, Z16)
	ROW8X2(Z9, Z17)
	ROW8X2(Z10, Z18)
	ROW8X2(Z11, Z19)
	ROW8X2(Z12, Z20)
	ROW8X2(Z13, Z21)
	ROW8X2(Z14, Z22)
	ROW8X2(Z15, Z23)
	XTREE(Z26)
	STORE8R(0, 24)
	STORE8R(1, 56)
	ADDQ         $32, R9
	SUBQ         $8, CX
	JNZ          x8x2loop
	VZEROUPPER
	RET

// func q8vnni512x3(sc, data *byte, rows, groups int, cols *[3]vnniCol8, k0, k1, k2, k3, kg int)
//
// q8vnni512x4 without its fourth column: Z20–Z23, zeroed once, stay zero
// through the tree (lanes 12–15, not stored). rows must be a positive
// multiple of 4.
TEXT ·q8vnni512x3(SB), NOSPLIT, $0-80
	X8PROLOGUE
	VPXORD       Z20, Z20, Z20
	VPXORD       Z21, Z21, Z21
	VPXORD       Z22, Z22, Z22
	VPXORD       Z23, Z23, Z23

x8x3loop:
	ROW8X3(Z8, Z12, Z16)
	ROW8X3(Z9, Z13, Z17)
	ROW8X3(Z10, Z14, Z18)
	ROW8X3(Z11, Z15, Z19)
	XTREE(Z26)
	STORE8(0, 24)
	STORE8(1, 56)
	STORE8(2, 88)
	ADDQ         $16, R9
	SUBQ         $4, CX
	JNZ          x8x3loop
	VZEROUPPER
	RET

// func q8vnni512x4(sc, data *byte, rows, groups int, cols *[4]vnniCol8, k0, k1, k2, k3, kg int)
//
// rows must be a positive multiple of 4; vnniCol8 is {x8, c8, dx, y}
// (32 bytes), pointers already offset to the tile's first group and row.
TEXT ·q8vnni512x4(SB), NOSPLIT, $0-80
	X8PROLOGUE

x8loop:
	ROW8X4(Z8, Z12, Z16, Z20)
	ROW8X4(Z9, Z13, Z17, Z21)
	ROW8X4(Z10, Z14, Z18, Z22)
	ROW8X4(Z11, Z15, Z19, Z23)
	XTREE(Z26)
	STORE8(0, 24)
	STORE8(1, 56)
	STORE8(2, 88)
	STORE8(3, 120)
	ADDQ         $16, R9
	SUBQ         $4, CX
	JNZ          x8loop
	VZEROUPPER
	RET

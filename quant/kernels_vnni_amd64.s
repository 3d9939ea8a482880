//go:build !noasm

#include "textflag.h"
#include "idx4_amd64.h"

// AVX-512 VNNI kernels: int8 activations (prepared once per product by
// Vec.Set) times unsigned weight bytes with VPDPBUSD. See
// docs/PERFORMANCE.md ("Kernels").

#define HSUM16(z, y, x, yt, xt) \
	VEXTRACTF64X4 $1, z, yt; \
	VADDPS        yt, y, y;  \
	VEXTRACTF128  $1, y, xt; \
	VADDPS        xt, x, x;  \
	VPERMILPS     $0x4e, x, xt; \
	VADDPS        xt, x, x;  \
	VPERMILPS     $0xb1, x, xt; \
	VADDSS        xt, x, x

// Lane → group maps for expanding per-group scales across accumulator lanes
// (IDX4, idx4_amd64.h): idx4a/idx4b give four lanes per group (groups 0–3,
// 4–7), idx8{0..3} eight lanes per group (groups 2b, 2b+1).
IDX4(idx4a<>, 0, 1, 2, 3)
IDX4(idx4b<>, 4, 5, 6, 7)
IDX4(idx80<>, 0, 0, 1, 1)
IDX4(idx81<>, 2, 2, 3, 3)
IDX4(idx82<>, 4, 4, 5, 5)
IDX4(idx83<>, 6, 6, 7, 7)

// Sixteen rows at a time, the row sums are reduced together: RED1..RED4
// transpose-and-add pairs of accumulators (rows a|b → 8+8 lanes, then 4
// rows × 4 lanes, 8 rows × 2, 16 rows × 1), so a row costs about 3
// shuffle/add instructions instead of 8 for its own horizontal sum, and y
// is updated with one 16-float add. Lane 4j+k of the result holds row
// j+4k; rowperm puts row r in lane r. Scratch: Z12, Z13.
#define RED1(a, b) VSHUFF64X2 $0x44, b, a, Z12; VSHUFF64X2 $0xee, b, a, Z13; VADDPS Z13, Z12, a
#define RED2(a, b) VSHUFF64X2 $0x88, b, a, Z12; VSHUFF64X2 $0xdd, b, a, Z13; VADDPS Z13, Z12, a
#define RED3(a, b) VSHUFPS $0x44, b, a, Z12; VSHUFPS $0xee, b, a, Z13; VADDPS Z13, Z12, a
#define RED4(a, b) VSHUFPS $0x88, b, a, Z12; VSHUFPS $0xdd, b, a, Z13; VADDPS Z13, Z12, a

DATA rowperm<>+0(SB)/4, $0
DATA rowperm<>+4(SB)/4, $4
DATA rowperm<>+8(SB)/4, $8
DATA rowperm<>+12(SB)/4, $12
DATA rowperm<>+16(SB)/4, $1
DATA rowperm<>+20(SB)/4, $5
DATA rowperm<>+24(SB)/4, $9
DATA rowperm<>+28(SB)/4, $13
DATA rowperm<>+32(SB)/4, $2
DATA rowperm<>+36(SB)/4, $6
DATA rowperm<>+40(SB)/4, $10
DATA rowperm<>+44(SB)/4, $14
DATA rowperm<>+48(SB)/4, $3
DATA rowperm<>+52(SB)/4, $7
DATA rowperm<>+56(SB)/4, $11
DATA rowperm<>+60(SB)/4, $15
GLOBL rowperm<>(SB), RODATA|NOPTR, $64

// ROWS16AT(ROW, Y) runs ROW(acc) for sixteen rows, reducing as it goes, and
// adds the sums into y[0:16] at Y, advancing Y. Accumulators Z7–Z11.
#define ROWS16AT(ROW, Y) \
	ROW(Z7); ROW(Z8); RED1(Z7, Z8); \
	ROW(Z8); ROW(Z9); RED1(Z8, Z9); \
	RED2(Z7, Z8); \
	ROW(Z8); ROW(Z9); RED1(Z8, Z9); \
	ROW(Z9); ROW(Z10); RED1(Z9, Z10); \
	RED2(Z8, Z9); \
	RED3(Z7, Z8); \
	ROW(Z8); ROW(Z9); RED1(Z8, Z9); \
	ROW(Z9); ROW(Z10); RED1(Z9, Z10); \
	RED2(Z8, Z9); \
	ROW(Z9); ROW(Z10); RED1(Z9, Z10); \
	ROW(Z10); ROW(Z11); RED1(Z10, Z11); \
	RED2(Z9, Z10); \
	RED3(Z8, Z9); \
	RED4(Z7, Z8); \
	VPERMPS Z7, Z14, Z7; \
	VADDPS  (Y), Z7, Z7; \
	VMOVUPS Z7, (Y); \
	ADDQ    $64, Y

// ROWS16 is ROWS16AT for the single-column kernels' y at R9.
#define ROWS16(ROW) ROWS16AT(ROW, R9)

// Q4BLK handles four groups (64 data bytes) at off(DI): nibbles q (0..15)
// as unsigned bytes against the int8 activation halves xl/xh, seeded with
// the −8·Σx bias, then converted and scaled per lane by sv.
#define Q4BLKAT(D, off, k, xl, xh, bias, sv, acc) \
	VMOVDQU32.Z off(D), k, Z3; \
	VPSRLW      $4, Z3, Z4;     \
	VPANDD      Z31, Z3, Z3;    \
	VPANDD      Z31, Z4, Z4;    \
	VMOVDQA32   bias, Z5;       \
	VPDPBUSD    xl, Z3, Z5;     \
	VPDPBUSD    xh, Z4, Z5;     \
	VCVTDQ2PS   Z5, Z5;         \
	VFMADD231PS sv, Z5, acc

// Q4BLK is Q4BLKAT for data at DI.
#define Q4BLK(off, k, xl, xh, bias, sv, acc) Q4BLKAT(DI, off, k, xl, xh, bias, sv, acc)

// Q4ROW computes one row (groups > 4) into acc and advances SI, DI. The
// prefetches run ahead in the tile stream (tiles of a stripe are
// contiguous, so near a tile's end they fetch the next tile's scales and
// data): into L1 2 KiB ahead, and into L2 8 KiB ahead, which keeps more
// DRAM lines in flight than the L1 miss buffers allow; docs/PERFORMANCE.md
// ("Decode stream") has the A/B (Sapphire Rapids: 8.9 → 11.0 GB/s from
// DRAM on one core, the plain read probe 9.6).
#define Q4ROWAT(acc, S, D) \
	PREFETCHT0  2048(D); \
	PREFETCHT0  2112(D); \
	PREFETCHT1  8192(D); \
	PREFETCHT1  8256(D); \
	VCVTPH2PS.Z (S), K3, Y0; \
	VMULPS      Y26, Y0, Y0;  \
	VPERMPS     Z0, Z27, Z1;  \
	VPERMPS     Z0, Z28, Z2;  \
	VXORPS      acc, acc, acc; \
	Q4BLKAT(D, 0, K1, Z20, Z21, Z22, Z1, acc); \
	Q4BLKAT(D, 64, K2, Z23, Z24, Z25, Z2, acc); \
	ADDQ        R10, S; \
	ADDQ        R11, D

// Q4ROW is Q4ROWAT on the tile at SI (scales) and DI (data); Q4ROWB on the
// pair kernel's second tile, at R12 and R13.
#define Q4ROW(acc) Q4ROWAT(acc, SI, DI)
#define Q4ROWB(acc) Q4ROWAT(acc, R12, R13)

// func q4vnni512(sc, data *byte, rows, groups int, xl, xh *int8, c4 *int32, dx, y *float32, k0, k1, kg int)
//
// Accumulator lane k of a block holds group k/4's partial dot; the row's
// scales times the activation scales are expanded to those lanes by VPERMPS.
TEXT ·q4vnni512(SB), NOSPLIT, $0-96
	MOVQ         sc+0(FP), SI
	MOVQ         data+8(FP), DI
	MOVQ         rows+16(FP), CX
	MOVQ         groups+24(FP), R8
	MOVQ         y+64(FP), R9
	MOVQ        k0+72(FP), AX
	KMOVW        AX, K1
	MOVQ        k1+80(FP), AX
	KMOVW        AX, K2
	MOVQ        kg+88(FP), AX
	KMOVW        AX, K3
	MOVL         $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z31
	MOVQ         xl+32(FP), AX
	VMOVDQU32.Z  (AX), K1, Z20
	VMOVDQU32.Z  64(AX), K2, Z23
	MOVQ         xh+40(FP), AX
	VMOVDQU32.Z  (AX), K1, Z21
	VMOVDQU32.Z  64(AX), K2, Z24
	MOVQ         c4+48(FP), AX
	VMOVDQU32.Z  (AX), K1, Z22
	VMOVDQU32.Z  64(AX), K2, Z25
	MOVQ         dx+56(FP), AX
	VMOVUPS.Z    (AX), K3, Y26
	VMOVDQU32    idx4a<>(SB), Z27
	VMOVDQU32    idx4b<>(SB), Z28
	VMOVDQU32    rowperm<>(SB), Z14
	LEAQ         (R8)(R8*1), R10
	MOVQ         R8, R11
	SHLQ         $4, R11
	CMPQ         R8, $4
	JGT          q4vnni8

q4vnni4:
	VCVTPH2PS.Z (SI), K3, Y0
	VMULPS      Y26, Y0, Y0
	VPERMPS     Z0, Z27, Z1
	VXORPS      Z6, Z6, Z6
	Q4BLK(0, K1, Z20, Z21, Z22, Z1, Z6)
	HSUM16(Z6, Y6, X6, Y7, X7)
	VADDSS      (R9), X6, X6
	VMOVSS      X6, (R9)
	ADDQ        R10, SI
	ADDQ        R11, DI
	ADDQ        $4, R9
	DECQ        CX
	JNZ         q4vnni4
	VZEROUPPER
	RET

q4vnni8:
	CMPQ CX, $16
	JLT  q4vnni8one

q4vnni16:
	ROWS16(Q4ROW)
	SUBQ $16, CX
	CMPQ CX, $16
	JGE  q4vnni16
	TESTQ CX, CX
	JZ   q4vnnidone

q4vnni8one:
	VCVTPH2PS.Z (SI), K3, Y0
	VMULPS      Y26, Y0, Y0
	VPERMPS     Z0, Z27, Z1
	VPERMPS     Z0, Z28, Z2
	VXORPS      Z6, Z6, Z6
	Q4BLK(0, K1, Z20, Z21, Z22, Z1, Z6)
	Q4BLK(64, K2, Z23, Z24, Z25, Z2, Z6)
	HSUM16(Z6, Y6, X6, Y7, X7)
	VADDSS      (R9), X6, X6
	VMOVSS      X6, (R9)
	ADDQ        R10, SI
	ADDQ        R11, DI
	ADDQ        $4, R9
	DECQ        CX
	JNZ         q4vnni8one

q4vnnidone:
	VZEROUPPER
	RET

// func q4vnni512pair(sc, data, scB, dataB *byte, rows int, xl, xh *int8, c4 *int32, dx, y, yB *float32)
//
// q4vnni512 for two full-width tiles (eight groups, rows a positive
// multiple of 16) over the same columns, walked sixteen rows of one, then
// sixteen of the other: two DRAM streams in flight instead of one, each
// with its own look-ahead (the avx2i8 path's q4avx2i8pair, which measured
// faster on Zen 3; docs/PERFORMANCE.md). Every row goes through Q4ROWAT
// and the ROWS16 tree as in q4vnni512, so each tile's sums keep Dot's bits.
TEXT ·q4vnni512pair(SB), NOSPLIT, $0-88
	MOVQ         sc+0(FP), SI
	MOVQ         data+8(FP), DI
	MOVQ         scB+16(FP), R12
	MOVQ         dataB+24(FP), R13
	MOVQ         rows+32(FP), CX
	MOVQ         y+72(FP), R9
	MOVQ         yB+80(FP), R14
	MOVL         $0xffff, AX
	KMOVW        AX, K1
	KMOVW        AX, K2
	MOVL         $0xff, AX
	KMOVW        AX, K3
	MOVL         $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z31
	MOVQ         xl+40(FP), AX
	VMOVDQU32    (AX), Z20
	VMOVDQU32    64(AX), Z23
	MOVQ         xh+48(FP), AX
	VMOVDQU32    (AX), Z21
	VMOVDQU32    64(AX), Z24
	MOVQ         c4+56(FP), AX
	VMOVDQU32    (AX), Z22
	VMOVDQU32    64(AX), Z25
	MOVQ         dx+64(FP), AX
	VMOVUPS      (AX), Y26
	VMOVDQU32    idx4a<>(SB), Z27
	VMOVDQU32    idx4b<>(SB), Z28
	VMOVDQU32    rowperm<>(SB), Z14
	MOVQ         $16, R10
	MOVQ         $128, R11

q4vnnipair:
	ROWS16AT(Q4ROW, R9)
	ROWS16AT(Q4ROWB, R14)
	SUBQ $16, CX
	JNZ  q4vnnipair
	VZEROUPPER
	RET

// Q8BLK handles two groups (64 data bytes) at off(DI): weights w stored as
// int8 become unsigned w+128 by flipping the sign bit; the bias lanes hold
// −128·Σx to undo it.
#define Q8BLK(off, k, x8, bias, idx, acc) \
	VMOVDQU32.Z off(DI), k, Z3; \
	VPXORD      Z31, Z3, Z3;    \
	VMOVDQA32   bias, Z5;       \
	VPDPBUSD    x8, Z3, Z5;     \
	VCVTDQ2PS   Z5, Z5;         \
	VPERMPS     Z0, idx, Z1;    \
	VFMADD231PS Z1, Z5, acc

// Q8ROW computes one full-width row (8 groups) into acc and advances SI,
// DI, prefetching into L1 like Q4ROW (the L2 prefetch 8 KiB ahead measured
// no gain here: Q8's stream already reads faster than the probe).
#define Q8ROW(acc) \
	PREFETCHT0  2048(DI); \
	PREFETCHT0  2112(DI); \
	PREFETCHT0  2176(DI); \
	PREFETCHT0  2240(DI); \
	VCVTPH2PS.Z (SI), K3, Y0; \
	VMULPS      Y26, Y0, Y0;  \
	VXORPS      acc, acc, acc; \
	Q8BLK(0, K1, Z16, Z20, Z27, acc); \
	Q8BLK(64, K2, Z17, Z21, Z28, acc); \
	Q8BLK(128, K4, Z18, Z22, Z29, acc); \
	Q8BLK(192, K5, Z19, Z23, Z30, acc); \
	ADDQ        R10, SI; \
	ADDQ        R11, DI

// func q8vnni512(sc, data *byte, rows, groups int, x8 *int8, c8 *int32, dx, y *float32, k0, k1, k2, k3, kg int)
TEXT ·q8vnni512(SB), NOSPLIT, $0-104
	MOVQ         sc+0(FP), SI
	MOVQ         data+8(FP), DI
	MOVQ         rows+16(FP), CX
	MOVQ         groups+24(FP), R8
	MOVQ         y+56(FP), R9
	MOVQ        k0+64(FP), AX
	KMOVW        AX, K1
	MOVQ        k1+72(FP), AX
	KMOVW        AX, K2
	MOVQ        k2+80(FP), AX
	KMOVW        AX, K4
	MOVQ        k3+88(FP), AX
	KMOVW        AX, K5
	MOVQ        kg+96(FP), AX
	KMOVW        AX, K3
	MOVL         $0x80808080, AX
	VPBROADCASTD AX, Z31
	MOVQ         x8+32(FP), AX
	VMOVDQU32.Z  (AX), K1, Z16
	VMOVDQU32.Z  64(AX), K2, Z17
	VMOVDQU32.Z  128(AX), K4, Z18
	VMOVDQU32.Z  192(AX), K5, Z19
	MOVQ         c8+40(FP), AX
	VMOVDQU32.Z  (AX), K1, Z20
	VMOVDQU32.Z  64(AX), K2, Z21
	VMOVDQU32.Z  128(AX), K4, Z22
	VMOVDQU32.Z  192(AX), K5, Z23
	MOVQ         dx+48(FP), AX
	VMOVUPS.Z    (AX), K3, Y26
	VMOVDQU32    idx80<>(SB), Z27
	VMOVDQU32    idx81<>(SB), Z28
	VMOVDQU32    idx82<>(SB), Z29
	VMOVDQU32    idx83<>(SB), Z30
	VMOVDQU32    rowperm<>(SB), Z14
	LEAQ         (R8)(R8*1), R10
	MOVQ         R8, R11
	SHLQ         $5, R11
	CMPQ         R8, $8
	JNE          q8vnnirow

q8vnni16:
	CMPQ CX, $16
	JLT  q8vnnirest
	ROWS16(Q8ROW)
	SUBQ $16, CX
	JMP  q8vnni16

q8vnnirest:
	TESTQ CX, CX
	JZ    q8vnnidone

q8vnnirow:
	VCVTPH2PS.Z (SI), K3, Y0
	VMULPS      Y26, Y0, Y0
	VXORPS      Z6, Z6, Z6
	Q8BLK(0, K1, Z16, Z20, Z27, Z6)
	CMPQ        R8, $2
	JLE         q8vnnisum
	Q8BLK(64, K2, Z17, Z21, Z28, Z6)
	CMPQ        R8, $4
	JLE         q8vnnisum
	Q8BLK(128, K4, Z18, Z22, Z29, Z6)
	CMPQ        R8, $6
	JLE         q8vnnisum
	Q8BLK(192, K5, Z19, Z23, Z30, Z6)

q8vnnisum:
	HSUM16(Z6, Y6, X6, Y7, X7)
	VADDSS (R9), X6, X6
	VMOVSS X6, (R9)
	ADDQ   R10, SI
	ADDQ   R11, DI
	ADDQ   $4, R9
	DECQ   CX
	JNZ    q8vnnirow

q8vnnidone:
	VZEROUPPER
	RET

// func quantize512(x *float32, groups int, q8, xl, xh *int8, dx *float32, c4, c8 *int32)
//
// Vec.quantizeGo's arithmetic, 32 values at a time: d = max|x|/127,
// q = round-to-even(x/d) (VCVTPS2DQ under the default rounding mode), and the c4/c8 bias lanes from VPDPBUSD
// against a vector of ones (each lane sums four q).
TEXT ·quantize512(SB), NOSPLIT, $0-64
	MOVQ         x+0(FP), SI
	MOVQ         groups+8(FP), CX
	MOVQ         q8+16(FP), DI
	MOVQ         xl+24(FP), R8
	MOVQ         xh+32(FP), R9
	MOVQ         dx+40(FP), R10
	MOVQ         c4+48(FP), R11
	MOVQ         c8+56(FP), R12
	MOVL         $0x7fffffff, AX
	VPBROADCASTD AX, Z31           // |·| mask
	MOVL         $0x01010101, AX
	VPBROADCASTD AX, Y30           // unsigned ones
	MOVL         $127, AX
	VCVTSI2SSL   AX, X29, X29      // 127.0
	TESTQ        CX, CX
	JZ           qdone

qloop:
	VMOVUPS     (SI), Z0
	VMOVUPS     64(SI), Z1
	VPANDD      Z31, Z0, Z2
	VPANDD      Z31, Z1, Z3
	VMAXPS      Z3, Z2, Z2
	VEXTRACTF64X4 $1, Z2, Y3
	VMAXPS      Y3, Y2, Y2
	VEXTRACTF128 $1, Y2, X3
	VMAXPS      X3, X2, X2
	VPERMILPS   $0x4e, X2, X3
	VMAXPS      X3, X2, X2
	VPERMILPS   $0xb1, X2, X3
	VMAXSS      X3, X2, X2         // X2 = max|x|
	VDIVSS      X29, X2, X4        // d = max/127
	VMOVSS      X4, (R10)
	VXORPS      X5, X5, X5
	VUCOMISS    X5, X4
	JEQ         qzero
	VBROADCASTSS X4, Z5
	VDIVPS      Z5, Z0, Z0
	VDIVPS      Z5, Z1, Z1
	VCVTPS2DQ   Z0, Z0
	VCVTPS2DQ   Z1, Z1
	VPMOVSDB    Z0, X6
	VPMOVSDB    Z1, X7
	JMP         qstore

qzero:
	VPXOR X6, X6, X6
	VPXOR X7, X7, X7

qstore:
	VMOVDQU       X6, (DI)
	VMOVDQU       X7, 16(DI)
	VMOVDQU       X6, (R8)
	VMOVDQU       X7, (R9)
	VINSERTI128   $1, X7, Y6, Y6   // the group's 32 q
	VPXOR         Y8, Y8, Y8
	VPDPBUSD      Y6, Y30, Y8      // Y8[l] = Σ q[4l..4l+3]
	VPSLLD        $7, Y8, Y9
	VPXOR         Y10, Y10, Y10
	VPSUBD        Y9, Y10, Y9      // −128·Σ
	VMOVDQU       Y9, (R12)
	VEXTRACTI128  $1, Y8, X9
	VPADDD        X9, X8, X8       // Σ over lane l of both halves
	VPSLLD        $3, X8, X8
	VPSUBD        X8, X10, X8      // −8·Σ
	VMOVDQU       X8, (R11)
	SUBQ          $-128, SI
	ADDQ          $32, DI
	ADDQ          $16, R8
	ADDQ          $16, R9
	ADDQ          $4, R10
	ADDQ          $16, R11
	ADDQ          $32, R12
	DECQ          CX
	JNZ           qloop

qdone:
	VZEROUPPER
	RET

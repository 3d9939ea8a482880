//go:build !noasm

#include "textflag.h"
#include "idx4_amd64.h"

// The vnnirl path's Q4_0 kernels: AVX-512 VNNI with the rows as lanes, the
// avx2i8 path's arithmetic (_asm/q4rows.go) at 512 bits. Each 128-bit lane
// of a weight row's 64-byte block is one group; four rows' blocks are mixed
// dword by dword through the same Latin square (C0..C3), and each column's
// activation bytes are permuted the same way once per call, so that four
// VPDPBUSD pairs leave, in dword j of lane g, row j's exact int32 sum of
// group g, the −8·Σx bias included. There is no reduction of partial lanes
// and no float work per row: per four rows and block one conversion and
// one multiply-add by the table T = row scales × activation scales. At the
// end of four rows a lane holds row j's value for group g (blocks 0 and 1
// added by the FMA); the tree adds groups (g0 + g2) + (g1 + g3) per row.
// The single-column kernel (q4vnnirl) and the four-column one
// (q4vnnirlx4) expand the same macros, so a column's result is Dot's bits.
//
// Frame (64-byte aligned at BX), per column block of RLCOL bytes:
// RLPERM(b, k, h): block b's activation bytes for the low (h = 0) or high
// (h = 1) nibbles in permutation k; RLBIAS(b): each group's −8·Σx in all
// four dwords of its lane; RLCS(b): each group's activation scale in all
// four lanes of its lane.

#define RLPERM(col, b, k, h) ((col)+((b)*8+(k)*2+(h))*64)
#define RLBIAS(col, b) ((col)+1024+(b)*64)
#define RLCS(col, b) ((col)+1152+(b)*64)
#define RLCOL 1280

// RS index tables: lane 4g+j of RS(b) is row j's scale of group 4b+g, from
// the two tables [s0 | s1] (indices 0–15) and [s2 | s3] (16–31).
#define RSIDX(name, o) \
	DATA name+0(SB)/4, $(0+o);   DATA name+4(SB)/4, $(8+o);   DATA name+8(SB)/4, $(16+o);  DATA name+12(SB)/4, $(24+o); \
	DATA name+16(SB)/4, $(1+o);  DATA name+20(SB)/4, $(9+o);  DATA name+24(SB)/4, $(17+o); DATA name+28(SB)/4, $(25+o); \
	DATA name+32(SB)/4, $(2+o);  DATA name+36(SB)/4, $(10+o); DATA name+40(SB)/4, $(18+o); DATA name+44(SB)/4, $(26+o); \
	DATA name+48(SB)/4, $(3+o);  DATA name+52(SB)/4, $(11+o); DATA name+56(SB)/4, $(19+o); DATA name+60(SB)/4, $(27+o); \
	GLOBL name(SB), RODATA|NOPTR, $64

RSIDX(rsidx0<>, 0)
RSIDX(rsidx1<>, 4)

// Group → lane maps (four lanes per group; groups 0–3, 4–7).
IDX4(rlg0<>, 0, 1, 2, 3)
IDX4(rlg1<>, 4, 5, 6, 7)

// RLPERMS stores the four permutations of the 16 dwords in Z16 at
// RLPERM(col, b, 0..3, h). Clobbers Z17.
#define RLPERMS(col, b, h) \
	VMOVDQA32 Z16, (RLPERM(col, b, 0, h))(BX); \
	VPSHUFD   $0x4e, Z16, Z17;                 \
	VMOVDQA32 Z17, (RLPERM(col, b, 1, h))(BX); \
	VPSHUFD   $0xb1, Z16, Z17;                 \
	VMOVDQA32 Z17, (RLPERM(col, b, 2, h))(BX); \
	VPSHUFD   $0x1b, Z16, Z17;                 \
	VMOVDQA32 Z17, (RLPERM(col, b, 3, h))(BX)

// RLPREPB writes block b of column block col from the column's xl, xh, c4
// (pointers in registers) under the block's dword mask kb. Clobbers Z16, Z17.
#define RLPREPB(col, b, kb, xl, xh, c4) \
	VMOVDQU32.Z (64*(b))(xl), kb, Z16; \
	RLPERMS(col, b, 0);                \
	VMOVDQU32.Z (64*(b))(xh), kb, Z16; \
	RLPERMS(col, b, 1);                \
	VMOVDQU32.Z (64*(b))(c4), kb, Z16; \
	VPSHUFD     $0x4e, Z16, Z17;       \
	VPADDD      Z17, Z16, Z16;         \
	VPSHUFD     $0xb1, Z16, Z17;       \
	VPADDD      Z17, Z16, Z16;         \
	VMOVDQA32   Z16, (RLBIAS(col, b))(BX)

// RLPREP writes column block col from the column's xl, xh, c4 and dx
// (pointers in registers). K1, K2: the blocks' dword masks; K3: the
// groups. Clobbers Z16–Z18.
#define RLPREP(col, xl, xh, c4, dx) \
	RLPREPB(col, 0, K1, xl, xh, c4); \
	RLPREPB(col, 1, K2, xl, xh, c4); \
	VMOVUPS.Z   (dx), K3, Y18;       \
	VMOVDQU32   rlg0<>(SB), Z16;     \
	VPERMPS     Z18, Z16, Z16;       \
	VMOVAPS     Z16, (RLCS(col, 0))(BX); \
	VMOVDQU32   rlg1<>(SB), Z16;     \
	VPERMPS     Z18, Z16, Z16;       \
	VMOVAPS     Z16, (RLCS(col, 1))(BX)

// RLSCALES puts four rows' scales (at SI, R10 bytes apart) into Z24 (RS0)
// and Z25 (RS1). Clobbers AX, Z16–Z19.
#define RLSCALES \
	VCVTPH2PS.Z  (SI), K3, Y16;         \
	VCVTPH2PS.Z  (SI)(R10*1), K3, Y17;  \
	LEAQ         (SI)(R10*2), AX;       \
	VCVTPH2PS.Z  (AX), K3, Y18;         \
	VCVTPH2PS.Z  (AX)(R10*1), K3, Y19;  \
	VINSERTF64X4 $1, Y17, Z16, Z16;     \
	VINSERTF64X4 $1, Y19, Z18, Z18;     \
	VMOVDQU32    rsidx0<>(SB), Z24;     \
	VPERMI2PS    Z18, Z16, Z24;         \
	VMOVDQU32    rsidx1<>(SB), Z25;     \
	VPERMI2PS    Z18, Z16, Z25

// RLPF prefetches ahead in the quad's four row streams as vnni's Q4ROW does
// per row: into L1 2 KiB ahead and into L2 8 KiB ahead (tiles of a stripe
// are contiguous, so near a tile's end these reach the next tile).
#define RLPF \
	PREFETCHT0 2048(DI);          \
	PREFETCHT0 2112(DI);          \
	PREFETCHT1 8192(DI);          \
	PREFETCHT1 8256(DI);          \
	PREFETCHT0 2048(DI)(R11*1);   \
	PREFETCHT0 2112(DI)(R11*1);   \
	PREFETCHT1 8192(DI)(R11*1);   \
	PREFETCHT1 8256(DI)(R11*1);   \
	PREFETCHT0 2048(DI)(R11*2);   \
	PREFETCHT0 2112(DI)(R11*2);   \
	PREFETCHT1 8192(DI)(R11*2);   \
	PREFETCHT1 8256(DI)(R11*2);   \
	PREFETCHT0 2048(DI)(R12*1);   \
	PREFETCHT0 2112(DI)(R12*1);   \
	PREFETCHT1 8192(DI)(R12*1);   \
	PREFETCHT1 8256(DI)(R12*1)

// RLMIX loads block b of four rows (at DI, R11 bytes apart, R12 = 3·R11)
// under the block's dword mask kb, mixes them into C0..C3 (Z8, Z10, Z12,
// Z14) and splits each into low and high nibbles (Z8/Z9 … Z14/Z15). K4 =
// 0xaaaa, K5 = 0x5555, K6 = 0xcccc. Clobbers Z0–Z7.
#define RLMIX(b, kb) \
	VMOVDQU32.Z (64*(b))(DI), kb, Z0;         \
	VMOVDQU32.Z (64*(b))(DI)(R11*1), kb, Z1;  \
	VMOVDQU32.Z (64*(b))(DI)(R11*2), kb, Z2;  \
	VMOVDQU32.Z (64*(b))(DI)(R12*1), kb, Z3;  \
	VPBLENDMD   Z1, Z0, K4, Z4;   \
	VPBLENDMD   Z1, Z0, K5, Z5;   \
	VPBLENDMD   Z3, Z2, K4, Z6;   \
	VPBLENDMD   Z3, Z2, K5, Z7;   \
	VPBLENDMD   Z6, Z4, K6, Z8;   \
	VSHUFPS     $0x4e, Z6, Z4, Z10; \
	VSHUFPS     $0xb1, Z7, Z5, Z12; \
	VSHUFPS     $0x1b, Z7, Z5, Z14; \
	VPSRLW      $4, Z8, Z9;       \
	VPSRLW      $4, Z10, Z11;     \
	VPSRLW      $4, Z12, Z13;     \
	VPSRLW      $4, Z14, Z15;     \
	VPANDD      Z31, Z8, Z8;      \
	VPANDD      Z31, Z9, Z9;      \
	VPANDD      Z31, Z10, Z10;    \
	VPANDD      Z31, Z11, Z11;    \
	VPANDD      Z31, Z12, Z12;    \
	VPANDD      Z31, Z13, Z13;    \
	VPANDD      Z31, Z14, Z14;    \
	VPANDD      Z31, Z15, Z15

// RLDOT leaves in Z20 the four rows' block-b group sums against column
// block col, as floats, and in Z21 the table T = RS(b) × the column's
// activation scales. The integer sums are exact, so splitting them over
// two accumulators changes no bit.
#define RLDOT(col, b, rs) \
	VMOVDQA32 (RLBIAS(col, b))(BX), Z20;        \
	VPXORD    Z21, Z21, Z21;                    \
	VPDPBUSD  (RLPERM(col, b, 0, 0))(BX), Z8, Z20;  \
	VPDPBUSD  (RLPERM(col, b, 2, 0))(BX), Z12, Z21; \
	VPDPBUSD  (RLPERM(col, b, 0, 1))(BX), Z9, Z20;  \
	VPDPBUSD  (RLPERM(col, b, 2, 1))(BX), Z13, Z21; \
	VPDPBUSD  (RLPERM(col, b, 1, 0))(BX), Z10, Z20; \
	VPDPBUSD  (RLPERM(col, b, 3, 0))(BX), Z14, Z21; \
	VPDPBUSD  (RLPERM(col, b, 1, 1))(BX), Z11, Z20; \
	VPDPBUSD  (RLPERM(col, b, 3, 1))(BX), Z15, Z21; \
	VPADDD    Z21, Z20, Z20;                    \
	VCVTDQ2PS Z20, Z20;                         \
	VMULPS    (RLCS(col, b))(BX), rs, Z21

// RLQUAD computes four rows (scales at SI, data at DI) against column
// block 0 into f (lane 4g+j: row j, groups g and g+4) and advances SI, DI.
#define RLQUAD(f) \
	RLPF;                       \
	RLSCALES;                   \
	RLMIX(0, K1);               \
	RLDOT(0, 0, Z24);           \
	VMULPS      Z21, Z20, f;    \
	RLMIX(1, K2);               \
	RLDOT(0, 1, Z25);           \
	VFMADD231PS Z21, Z20, f;    \
	LEAQ        (SI)(R10*4), SI; \
	LEAQ        (DI)(R11*4), DI

// RLTREE adds each 128-bit lane's four values across groups of f0..f3
// (Z22, Z23, Z26, Z27): lane 4i+j of Z0 is (g0 + g2) + (g1 + g3) of f_i's
// row j. Clobbers Z1–Z3.
#define RLTREE \
	VSHUFF32X4 $0x44, Z23, Z22, Z0; \
	VSHUFF32X4 $0xee, Z23, Z22, Z1; \
	VADDPS     Z1, Z0, Z0;          \
	VSHUFF32X4 $0x44, Z27, Z26, Z2; \
	VSHUFF32X4 $0xee, Z27, Z26, Z3; \
	VADDPS     Z3, Z2, Z2;          \
	VSHUFF32X4 $0x88, Z2, Z0, Z1;   \
	VSHUFF32X4 $0xdd, Z2, Z0, Z3;   \
	VADDPS     Z3, Z1, Z0

// RLCONSTS loads the masks and constants every kernel uses, from k0, k1,
// kg in AX, DX, R13.
#define RLCONSTS \
	KMOVW        AX, K1;       \
	KMOVW        DX, K2;       \
	KMOVW        R13, K3;      \
	MOVL         $0xaaaa, AX;  \
	KMOVW        AX, K4;       \
	MOVL         $0x5555, AX;  \
	KMOVW        AX, K5;       \
	MOVL         $0xcccc, AX;  \
	KMOVW        AX, K6;       \
	MOVL         $0x0f0f0f0f, AX; \
	VPBROADCASTD AX, Z31;      \
	LEAQ         (R8)(R8*1), R10; \
	MOVQ         R8, R11;      \
	SHLQ         $4, R11;      \
	LEAQ         (R11)(R11*2), R12; \
	LEAQ         63(SP), BX;   \
	ANDQ         $~63, BX

// RL16 computes sixteen rows (four quads) against column block 0 and adds
// them into y[0:16] at R9, advancing R9.
#define RL16 \
	RLQUAD(Z22);          \
	RLQUAD(Z23);          \
	RLQUAD(Z26);          \
	RLQUAD(Z27);          \
	RLTREE;               \
	VADDPS  (R9), Z0, Z0; \
	VMOVUPS Z0, (R9);     \
	ADDQ    $64, R9

// RLSWAP exchanges the pair kernel's two streams (scales, data, y) between
// SI, DI, R9 and DX, R13, R14.
#define RLSWAP \
	XCHGQ SI, DX;  \
	XCHGQ DI, R13; \
	XCHGQ R9, R14

// RLDOTCOL runs block b of the mixed rows against column block c's
// activations and adds it into f (b = 0: a multiply).
#define RLCOL0(c, f) \
	RLDOT((c)*RLCOL, 0, Z24); \
	VMULPS Z21, Z20, f

#define RLCOL1(c, f) \
	RLDOT((c)*RLCOL, 1, Z25); \
	VFMADD231PS Z21, Z20, f

// RLSTORE adds lanes 4c..4c+3 of Z0 (column c's four rows) into its y at
// R9 (the vnniCol records at R15). Clobbers AX, X1.
#define RLSTORE(c) \
	VEXTRACTF32X4 $c, Z0, X1;          \
	MOVQ          (40*(c)+32)(R15), AX; \
	VADDPS        (AX)(R9*1), X1, X1;  \
	VMOVUPS       X1, (AX)(R9*1)

// RLPREPCOL prepares column c's block from its vnniCol record at R15.
// Clobbers AX, DX, R13, R14.
#define RLPREPCOL(c) \
	MOVQ (40*(c))(R15), AX;    \
	MOVQ (40*(c)+8)(R15), DX;  \
	MOVQ (40*(c)+16)(R15), R13; \
	MOVQ (40*(c)+24)(R15), R14; \
	RLPREP((c)*RLCOL, AX, DX, R13, R14)

// RLXARGS loads a multi-column kernel's arguments and constants.
#define RLXARGS \
	MOVQ sc+0(FP), SI;     \
	MOVQ data+8(FP), DI;   \
	MOVQ rows+16(FP), CX;  \
	MOVQ groups+24(FP), R8; \
	MOVQ cols+32(FP), R15; \
	MOVQ k0+40(FP), AX;    \
	MOVQ k1+48(FP), DX;    \
	MOVQ kg+56(FP), R13;   \
	RLCONSTS

// RLNEXT advances SI, DI past the quad and leaves its tree in Z0.
#define RLNEXT \
	LEAQ (SI)(R10*4), SI; \
	LEAQ (DI)(R11*4), DI; \
	RLTREE

// RLSTORE0 adds lanes 0..3 of Z0 (column 0's four rows) into its y at R9.
#define RLSTORE0 \
	MOVQ    32(R15), AX;       \
	VADDPS  (AX)(R9*1), X0, X1; \
	VMOVUPS X1, (AX)(R9*1)

// func q4vnnirl(sc, data *byte, rows, groups int, xl, xh *int8, c4 *int32, dx, y *float32, k0, k1, kg int)
//
// One column, any rows: sixteen at a time, then a quad at a time, then a
// last one to three rows through a zeroed copy (so nothing past the tile
// is read), stored under a lane mask.
TEXT ·q4vnnirl(SB), $1920-96
	MOVQ sc+0(FP), SI
	MOVQ data+8(FP), DI
	MOVQ rows+16(FP), CX
	MOVQ groups+24(FP), R8
	MOVQ y+64(FP), R9
	MOVQ k0+72(FP), AX
	MOVQ k1+80(FP), DX
	MOVQ kg+88(FP), R13
	RLCONSTS
	MOVQ xl+32(FP), AX
	MOVQ xh+40(FP), DX
	MOVQ c4+48(FP), R13
	MOVQ dx+56(FP), R14
	RLPREP(0, AX, DX, R13, R14)
	CMPQ CX, $16
	JLT  rlquads

rl16:
	RL16
	SUBQ    $16, CX
	CMPQ    CX, $16
	JGE     rl16

rlquads:
	VPXORD Z23, Z23, Z23
	VPXORD Z26, Z26, Z26
	VPXORD Z27, Z27, Z27
	CMPQ   CX, $4
	JLT    rltail

rlquad:
	RLQUAD(Z22)
	RLTREE
	VADDPS  (R9), X0, X0
	VMOVUPS X0, (R9)
	ADDQ    $16, R9
	SUBQ    $4, CX
	CMPQ    CX, $4
	JGE     rlquad

rltail:
	TESTQ CX, CX
	JZ    rldone
	// Copy the last CX rows into a zeroed four-row tile in the frame
	// (data rows 128 bytes apart at RLCOL(BX), scales 16 bytes apart
	// after them), and run one quad on it.
	VPXORD    Z0, Z0, Z0
	VMOVDQA32 Z0, (RLCOL+0)(BX)
	VMOVDQA32 Z0, (RLCOL+64)(BX)
	VMOVDQA32 Z0, (RLCOL+128)(BX)
	VMOVDQA32 Z0, (RLCOL+192)(BX)
	VMOVDQA32 Z0, (RLCOL+256)(BX)
	VMOVDQA32 Z0, (RLCOL+320)(BX)
	VMOVDQA32 Z0, (RLCOL+384)(BX)
	VMOVDQA32 Z0, (RLCOL+448)(BX)
	VMOVDQA32 Z0, (RLCOL+512)(BX)
	LEAQ      RLCOL(BX), AX
	LEAQ      (RLCOL+512)(BX), DX
	MOVQ      CX, R13

rlcopy:
	VMOVDQU32.Z (DI), K1, Z0
	VMOVDQA32   Z0, (AX)
	VMOVDQU32.Z 64(DI), K2, Z0
	VMOVDQA32   Z0, 64(AX)
	VMOVDQU16.Z (SI), K3, X0
	VMOVDQU     X0, (DX)
	ADDQ        R11, DI
	ADDQ        R10, SI
	ADDQ        $128, AX
	ADDQ        $16, DX
	DECQ        R13
	JNZ         rlcopy
	LEAQ        RLCOL(BX), DI
	LEAQ        (RLCOL+512)(BX), SI
	MOVQ        $16, R10
	MOVQ        $128, R11
	MOVQ        $384, R12
	RLQUAD(Z22)
	RLTREE
	MOVQ        $1, AX
	SHLQ        CX, AX
	DECQ        AX
	KMOVW       AX, K7
	VMOVUPS.Z   (R9), K7, X1
	VADDPS      X1, X0, X0
	VMOVUPS     X0, K7, (R9)

rldone:
	VZEROUPPER
	RET

// RLXHEAD starts a multi-column kernel's quad: prefetches, the rows'
// scales, block 0 mixed.
#define RLXHEAD \
	RLPF;        \
	RLSCALES;    \
	RLMIX(0, K1)

// RLXEND closes a multi-column kernel's quad loop (label lbl).
#define RLXEND(lbl) \
	ADDQ $16, R9;  \
	SUBQ $4, CX;   \
	JNZ  lbl;      \
	VZEROUPPER;    \
	RET

// func q4vnnirlpair(sc, data, scB, dataB *byte, rows, groups int, xl, xh *int8, c4 *int32, dx, y, yB *float32, k0, k1, kg int)
//
// Two tiles over the same columns and rows (a multiple of 16), sixteen
// rows of one then sixteen of the other, each through q4vnnirl's 16-row
// step and each stream with its own prefetches: two DRAM streams in flight
// per core, as avx2i8's pair kernel walks them. The second stream's
// pointers wait in DX, R13, R14 while the first runs.
TEXT ·q4vnnirlpair(SB), $1344-120
	MOVQ sc+0(FP), SI
	MOVQ data+8(FP), DI
	MOVQ rows+32(FP), CX
	MOVQ groups+40(FP), R8
	MOVQ y+80(FP), R9
	MOVQ k0+96(FP), AX
	MOVQ k1+104(FP), DX
	MOVQ kg+112(FP), R13
	RLCONSTS
	MOVQ xl+48(FP), AX
	MOVQ xh+56(FP), DX
	MOVQ c4+64(FP), R13
	MOVQ dx+72(FP), R14
	RLPREP(0, AX, DX, R13, R14)
	MOVQ scB+16(FP), DX
	MOVQ dataB+24(FP), R13
	MOVQ yB+88(FP), R14

rlpair:
	RL16
	RLSWAP
	RL16
	RLSWAP
	SUBQ    $16, CX
	JNZ     rlpair
	VZEROUPPER
	RET

// func q4vnnirlx4(sc, data *byte, rows, groups int, cols *[4]vnniCol, k0, k1, kg int)
//
// Four columns, rows a positive multiple of 4: each quad's rows are mixed
// once per block for the four columns, whose values then go through
// RLDOT and RLTREE as in q4vnnirl.
TEXT ·q4vnnirlx4(SB), $5184-64
	RLXARGS
	RLPREPCOL(0)
	RLPREPCOL(1)
	RLPREPCOL(2)
	RLPREPCOL(3)
	XORQ R9, R9

rlx4:
	RLXHEAD
	RLCOL0(0, Z22)
	RLCOL0(1, Z23)
	RLCOL0(2, Z26)
	RLCOL0(3, Z27)
	RLMIX(1, K2)
	RLCOL1(0, Z22)
	RLCOL1(1, Z23)
	RLCOL1(2, Z26)
	RLCOL1(3, Z27)
	RLNEXT
	RLSTORE0
	RLSTORE(1)
	RLSTORE(2)
	RLSTORE(3)
	RLXEND(rlx4)

// func q4vnnirlx3(sc, data *byte, rows, groups int, cols *[3]vnniCol, k0, k1, kg int)
//
// q4vnnirlx4 for three columns (the fourth tree input stays zero).
TEXT ·q4vnnirlx3(SB), $3904-64
	RLXARGS
	RLPREPCOL(0)
	RLPREPCOL(1)
	RLPREPCOL(2)
	XORQ   R9, R9
	VPXORD Z27, Z27, Z27

rlx3:
	RLXHEAD
	RLCOL0(0, Z22)
	RLCOL0(1, Z23)
	RLCOL0(2, Z26)
	RLMIX(1, K2)
	RLCOL1(0, Z22)
	RLCOL1(1, Z23)
	RLCOL1(2, Z26)
	RLNEXT
	RLSTORE0
	RLSTORE(1)
	RLSTORE(2)
	RLXEND(rlx3)

// func q4vnnirlx2(sc, data *byte, rows, groups int, cols *[2]vnniCol, k0, k1, kg int)
//
// q4vnnirlx4 for two columns (the third and fourth tree inputs stay zero).
TEXT ·q4vnnirlx2(SB), $2624-64
	RLXARGS
	RLPREPCOL(0)
	RLPREPCOL(1)
	XORQ   R9, R9
	VPXORD Z26, Z26, Z26
	VPXORD Z27, Z27, Z27

rlx2:
	RLXHEAD
	RLCOL0(0, Z22)
	RLCOL0(1, Z23)
	RLMIX(1, K2)
	RLCOL1(0, Z22)
	RLCOL1(1, Z23)
	RLNEXT
	RLSTORE0
	RLSTORE(1)
	RLXEND(rlx2)

//go:build !noasm

#include "textflag.h"

// Multi-column kernels of the avx2i8 path for DotBatch: one tile against
// four int8 activation columns, a row at a time. Each row's weights are
// unpacked once (Q4: the nibble split; Q8: their magnitudes) for the four
// columns. At entry each column's activation block (its int8 views and
// scales for the tile's eight possible groups, Vec padding included) is
// copied into the frame, so the inner loop addresses all four columns off
// SP and one offset register instead of twelve pointers.

// Frame (q4avx2i8x4): the full-row loop's four column tables at the
// first 32-byte aligned address from 0 (R13; within bytes 0–159), the
// short rows' own scales at 160 (lanes ≥ groups stay 0); column c's xl,
// xh, c4 and dx at 192 + c·416 (+0, +128, +256, +384); its dx in even/odd group order (see
// kernels_avx2i8_amd64.s, f16perm) at 1856 + c·32, and its per-group bias
// sums (c4's four lanes added, as floats, same order) at 1984 + c·32; the
// row sums, four floats (columns 0..3) per row, at 2112 (up to 128 rows).
#define Q4XL(c) (192+(c)*416)
#define Q4XH(c) (192+(c)*416+128)
#define Q4C4(c) (192+(c)*416+256)
#define Q4DX(c) (192+(c)*416+384)
#define Q4TDX(c) (1856+(c)*32)
#define Q4CF(c) (1984+(c)*32)
#define Q4ROWS 2112

// COPY4 copies 128 bytes from src (clobbering Y0..Y3) to off(SP).
#define COPY4(src, off) \
	VMOVDQU (src), Y0;     \
	VMOVDQU 32(src), Y1;   \
	VMOVDQU 64(src), Y2;   \
	VMOVDQU 96(src), Y3;   \
	VMOVDQU Y0, off(SP);   \
	VMOVDQU Y1, off+32(SP); \
	VMOVDQU Y2, off+64(SP); \
	VMOVDQU Y3, off+96(SP)

// Q4COLIN copies column c's activation block (cols[c] at BX, vnniCol:
// xl, xh, c4, dx, y at +0..+32).
#define Q4COLIN(c) \
	MOVQ    ((c)*40)(BX), AX;    \
	COPY4(AX, Q4XL(c));          \
	MOVQ    ((c)*40+8)(BX), AX;  \
	COPY4(AX, Q4XH(c));          \
	MOVQ    ((c)*40+16)(BX), AX; \
	COPY4(AX, Q4C4(c));          \
	MOVQ    ((c)*40+24)(BX), AX; \
	VMOVUPS (AX), Y0;            \
	VMOVUPS Y0, Q4DX(c)(SP)

// ROWDW puts the row's f16 scales at SI, as floats, into Y6: one 16-byte
// load while it cannot pass the scale array's end (rows left CX · 2G ≥ 16
// bytes), masked to the row's G lanes (sc16mask4); else one scale at a
// time through the zeroed slot at 160(SP). Clobbers AX, DX, R11.
#define ROWDW(part, pel, done) \
	MOVQ      CX, AX;           \
	IMULQ     R8, AX;           \
	CMPQ      AX, $8;           \
	JLT       part;             \
	LEAQ      sc16mask4<>+16(SB), R11; \
	SUBQ      R8, R11;          \
	SUBQ      R8, R11;          \
	VMOVDQU   (SI), X6;         \
	VPAND     (R11), X6, X6;    \
	VCVTPH2PS X6, Y6;           \
	JMP       done;             \
part: \
	XORQ      DX, DX;           \
pel: \
	MOVWLZX   (SI)(DX*2), AX;   \
	VMOVD     AX, X6;           \
	VCVTPH2PS X6, X6;           \
	VMOVSS    X6, 160(SP)(DX*4); \
	INCQ      DX;               \
	CMPQ      DX, R8;           \
	JLT       pel;              \
	VMOVUPS   160(SP), Y6;      \
done:

// sc16mask4 is kernels_avx2i8_amd64.s's sc16mask.
DATA sc16mask4<>+0(SB)/8, $-1
DATA sc16mask4<>+8(SB)/8, $-1
DATA sc16mask4<>+16(SB)/8, $0
DATA sc16mask4<>+24(SB)/8, $0
GLOBL sc16mask4<>(SB), RODATA|NOPTR, $32

// SUM4 leaves the horizontal sums of Y0..Y3 in X8 (lane c: Yc's), added
// in the order the single-column kernels' RED4 adds a row's lanes
// ((0+1)+(2+3)) + ((4+5)+(6+7)), so a column's sums are bit for bit the
// single-column kernel's: a different order (unpack-and-add, tried for its
// single-uop shuffles) moves sums by an ulp, and an ulp is enough to flip
// a later int8 activation rounding, which batched prefill then carries
// through the layers (verify's TestBatchedPrefillMatchesSteps, llama_wide).
// Clobbers Y4, Y5, Y8, Y9.
#define SUM4 \
	VHADDPS      Y1, Y0, Y4; \
	VHADDPS      Y3, Y2, Y5; \
	VHADDPS      Y5, Y4, Y8; \
	VEXTRACTF128 $1, Y8, X9; \
	VADDPS       X9, X8, X8

// YADD4 adds four rows of one column (x) into that column's y (its
// pointer at yo+32(BX)) at row offset R9.
#define YADD4(yo, x) \
	MOVQ    (yo+32)(BX), R12;   \
	VADDPS  (R12)(R9*1), x, x;  \
	VMOVUPS x, (R12)(R9*1)

// YSCATTER adds X0's four lanes (columns 0..3) into each column's y at
// row offset R9. Clobbers R12, X1, X2.
#define YSCATTER \
	MOVQ         32(BX), R12;       \
	VADDSS       (R12)(R9*1), X0, X1; \
	VMOVSS       X1, (R12)(R9*1);   \
	VMOVSHDUP    X0, X2;            \
	MOVQ         72(BX), R12;       \
	VADDSS       (R12)(R9*1), X2, X1; \
	VMOVSS       X1, (R12)(R9*1);   \
	VMOVHLPS     X0, X0, X2;        \
	MOVQ         112(BX), R12;      \
	VADDSS       (R12)(R9*1), X2, X1; \
	VMOVSS       X1, (R12)(R9*1);   \
	VPERMILPS    $0xff, X0, X2;     \
	MOVQ         152(BX), R12;      \
	VADDSS       (R12)(R9*1), X2, X1; \
	VMOVSS       X1, (R12)(R9*1)

// FLUSHROWS adds the row sums stored at off(SP) (four floats, columns
// 0..3, per row) into the columns' outputs: four rows at a time after a
// 4×4 transpose, the last rows mod 4 one at a time. Jumps to done.
#define FLUSHROWS(off, l4, l1, done) \
	MOVQ rows+16(FP), CX; \
	XORQ R9, R9;          \
	CMPQ CX, $4;          \
	JLT  l1;              \
l4: \
	VMOVUPS   off(SP)(R9*4), X0;      \
	VMOVUPS   (off+16)(SP)(R9*4), X1; \
	VMOVUPS   (off+32)(SP)(R9*4), X2; \
	VMOVUPS   (off+48)(SP)(R9*4), X3; \
	VUNPCKLPS X1, X0, X4; \
	VUNPCKHPS X1, X0, X5; \
	VUNPCKLPS X3, X2, X6; \
	VUNPCKHPS X3, X2, X7; \
	VUNPCKLPD X6, X4, X0; \
	VUNPCKHPD X6, X4, X1; \
	VUNPCKLPD X7, X5, X2; \
	VUNPCKHPD X7, X5, X3; \
	YADD4(0, X0);         \
	YADD4(40, X1);        \
	YADD4(80, X2);        \
	YADD4(120, X3);       \
	ADDQ      $16, R9;    \
	SUBQ      $4, CX;     \
	CMPQ      CX, $4;     \
	JGE       l4;         \
l1: \
	TESTQ   CX, CX;       \
	JZ      done;         \
	VMOVUPS off(SP)(R9*4), X0; \
	YSCATTER;             \
	ADDQ    $4, R9;       \
	DECQ    CX;           \
	JMP     l1

// Q4COLT adds the unpacked group pair p (Y4 low, Y5 high nibbles) times
// column c's activation pair into acc, scaled from the column's even/odd
// table t by an in-lane VPERMILPS; the −8·Σx bias is left out (the row
// adds it once per column).
#define Q4COLT(c, p, t, acc) \
	VPMADDUBSW  (Q4XL(c)+32*(p))(SP), Y4, Y8; \
	VPMADDUBSW  (Q4XH(c)+32*(p))(SP), Y5, Y9; \
	VPADDW      Y9, Y8, Y8;                   \
	VPMADDWD    Y14, Y8, Y8;                  \
	VCVTDQ2PS   Y8, Y8;                       \
	VPERMILPS   $(0x55*(p)), t, Y9;           \
	VFMADD231PS Y9, Y8, acc

// Q4BIAS stores column c's per-group bias sums: three VPHADDD of its c4
// block (groups 0,1 | 2,3 | 4,5 | 6,7) leave them in even/odd order.
#define Q4BIAS(c) \
	VMOVDQU   Q4C4(c)(SP), Y0;      \
	VPHADDD   (Q4C4(c)+32)(SP), Y0, Y0; \
	VMOVDQU   (Q4C4(c)+64)(SP), Y1; \
	VPHADDD   (Q4C4(c)+96)(SP), Y1, Y1; \
	VPHADDD   Y1, Y0, Y0;           \
	VCVTDQ2PS Y0, Y0;               \
	VMOVUPS   Y0, Q4CF(c)(SP)

// Q4PAIRT runs group pair p of a full row against the four columns.
#define Q4PAIRT(p) \
	VMOVDQU (32*(p))(DI), Y4;  \
	VPSRLW  $4, Y4, Y5;        \
	VPAND   Y15, Y4, Y4;       \
	VPAND   Y15, Y5, Y5;       \
	Q4COLT(0, p, Y6, Y0);      \
	Q4COLT(1, p, Y7, Y1);      \
	Q4COLT(2, p, Y10, Y2);     \
	Q4COLT(3, p, Y11, Y3)

// Q4HALFT is Q4PAIRT for a row's lone last group (an odd group count):
// a 16-byte load zeroes the upper lanes, whose table lanes are zero too.
#define Q4HALFT(p) \
	VMOVDQU (32*(p))(DI), X4;  \
	VPSRLW  $4, Y4, Y5;        \
	VPAND   Y15, Y4, Y4;       \
	VPAND   Y15, Y5, Y5;       \
	Q4COLT(0, p, Y6, Y0);      \
	Q4COLT(1, p, Y7, Y1);      \
	Q4COLT(2, p, Y10, Y2);     \
	Q4COLT(3, p, Y11, Y3)

// Q4ROWTAB puts the full row's four column tables (its scales, in
// even/odd group order by f16perm4 before the conversion, times each
// column's activation scales) at 0..127(R13). Clobbers Y12, Y13.
#define Q4ROWTAB \
	PREFETCHT0 (X4PFD)(DI);             \
	PREFETCHT0 (X4PFD+64)(DI);          \
	PREFETCHT0 (X4PFD/8)(SI);           \
	VMOVDQU   (SI), X12;                \
	VPSHUFB   f16perm4<>(SB), X12, X12; \
	VCVTPH2PS X12, Y12;                 \
	VMULPS    Q4TDX(0)(SP), Y12, Y13;   \
	VMOVUPS   Y13, (R13);               \
	VMULPS    Q4TDX(1)(SP), Y12, Y13;   \
	VMOVUPS   Y13, 32(R13);             \
	VMULPS    Q4TDX(2)(SP), Y12, Y13;   \
	VMOVUPS   Y13, 64(R13);             \
	VMULPS    Q4TDX(3)(SP), Y12, Y13;   \
	VMOVUPS   Y13, 96(R13)

// Q4COLM is Q4COLT with column c's table at c·32(R13).
#define Q4COLM(c, p, acc) \
	VPMADDUBSW  (Q4XL(c)+32*(p))(SP), Y4, Y8; \
	VPMADDUBSW  (Q4XH(c)+32*(p))(SP), Y5, Y9; \
	VPADDW      Y9, Y8, Y8;                   \
	VPMADDWD    Y14, Y8, Y8;                  \
	VCVTDQ2PS   Y8, Y8;                       \
	VPERMILPS   $(0x55*(p)), (32*(c))(R13), Y9; \
	VFMADD231PS Y9, Y8, acc

// Q4PAIRM runs group pair p of a full row against the four columns into
// accumulators a0..a3.
#define Q4PAIRM(p, a0, a1, a2, a3) \
	VMOVDQU (32*(p))(DI), Y4; \
	VPSRLW  $4, Y4, Y5;       \
	VPAND   Y15, Y4, Y4;      \
	VPAND   Y15, Y5, Y5;      \
	Q4COLM(0, p, a0);         \
	Q4COLM(1, p, a1);         \
	Q4COLM(2, p, a2);         \
	Q4COLM(3, p, a3)

// Q4BIASM adds each column's bias (table · bias sums) into a0..a3.
#define Q4BIASM(a0, a1, a2, a3) \
	VMOVUPS     (R13), Y9;              \
	VFMADD231PS Q4CF(0)(SP), Y9, a0;    \
	VMOVUPS     32(R13), Y9;            \
	VFMADD231PS Q4CF(1)(SP), Y9, a1;    \
	VMOVUPS     64(R13), Y9;            \
	VFMADD231PS Q4CF(2)(SP), Y9, a2;    \
	VMOVUPS     96(R13), Y9;            \
	VFMADD231PS Q4CF(3)(SP), Y9, a3

// SUMLV1..3 are SUM4 in place, in three parts, for the previous row (its
// sums to the row slot before R9): VSHUFPS $0x88 / $0xdd then an add is
// VHADDPS lane for lane (the same pairs added; an add's operand order
// does not change its result), and the levels pair lanes as SUM4 does.
// Clobber Y12, Y13 and the accumulators.
#define SUMLV1(a0, a1, a2, a3) \
	VSHUFPS $0x88, a1, a0, Y12; \
	VSHUFPS $0xdd, a1, a0, a0;  \
	VADDPS  a0, Y12, a0;        \
	VSHUFPS $0x88, a3, a2, Y13; \
	VSHUFPS $0xdd, a3, a2, a2;  \
	VADDPS  a2, Y13, a2

#define SUMLV2(a0, a2) \
	VSHUFPS $0x88, a2, a0, Y12; \
	VSHUFPS $0xdd, a2, a0, a0;  \
	VADDPS  a0, Y12, a0

#define SUMLV3(a0, x0) \
	VEXTRACTF128 $1, a0, X12; \
	VADDPS       X12, x0, x0; \
	VMOVUPS      x0, (Q4ROWS-16)(SP)(R9*4)

// X4PFD is how far ahead of the row both four-column kernels prefetch
// their data stream into L1 (the scale stream X4PFD/8 ahead for Q4,
// X4PFD/16 for Q8: the same distance in tiles), as the single-column
// kernels do (PFD): without it a tile streaming from DRAM ran at about
// 60% of its L1-resident speed (see docs/PERFORMANCE.md, "Zen 3:
// q4avx2i8x4 and q8avx2i8x4"). Past a tile's end it reaches the next
// tile of the stripe, which follows in the file.
#define X4PFD 4096

// func q4avx2i8x4(sc, data *byte, rows, groups int, cols *[4]vnniCol)
//
// A row at a time (full rows: the pipelined loop after the entry code,
// q4x4fb; other rows: q4x4row): each column's table (the row's scales
// times the column's activation scales, even/odd group order) in Y6, Y7,
// Y10, Y11;
// the group pairs unrolled (the in-lane VPERMILPS takes its pair as an
// immediate), a short row leaving after its last pair. The Q4 bias enters
// per row and column as table · (Σ of each group's c4 lanes), one FMA
// instead of an integer add per group pair; the products stay exact
// integers until the scale multiply either way. Table lanes past the
// row's groups are zero, so the activation's next groups (read by the
// 32-byte loads) contribute nothing.
TEXT ·q4avx2i8x4(SB), $4160-40
	MOVQ         sc+0(FP), SI
	MOVQ         data+8(FP), DI
	MOVQ         rows+16(FP), CX
	MOVQ         groups+24(FP), R8
	MOVQ         cols+32(FP), BX
	Q4COLIN(0)
	Q4COLIN(1)
	Q4COLIN(2)
	Q4COLIN(3)
	MOVL         $0x0f0f0f0f, AX
	VMOVD        AX, X15
	VPBROADCASTD X15, Y15
	MOVL         $0x00010001, AX
	VMOVD        AX, X14
	VPBROADCASTD X14, Y14
	VXORPS       Y0, Y0, Y0
	VMOVUPS      Y0, 160(SP)
	MOVQ         R8, R10
	SHLQ         $4, R10           // a row's nibble bytes
	XORQ         R9, R9
	Q4BIAS(0)
	Q4BIAS(1)
	Q4BIAS(2)
	Q4BIAS(3)
	VMOVDQU      f32perm4<>(SB), Y13
	VPERMPS      Q4DX(0)(SP), Y13, Y12
	VMOVUPS      Y12, Q4TDX(0)(SP)
	VPERMPS      Q4DX(1)(SP), Y13, Y12
	VMOVUPS      Y12, Q4TDX(1)(SP)
	VPERMPS      Q4DX(2)(SP), Y13, Y12
	VMOVUPS      Y12, Q4TDX(2)(SP)
	VPERMPS      Q4DX(3)(SP), Y13, Y12
	VMOVUPS      Y12, Q4TDX(3)(SP)

	CMPQ      R8, $8
	JNE       q4x4row

	// Full rows (8 groups, every row of a full tile), software-pipelined:
	// rows alternate between two accumulator sets (Y0–Y3, Y6/Y7/Y10/Y11),
	// and a row's reduction (SUMLV1–3) runs spread over the next row's
	// pairs instead of at its own end, where its chain of dependent
	// shuffles and adds left the units idle. The columns' tables go to an
	// aligned frame slot (R13) and are spread by VPERMILPS from memory,
	// which frees the registers of the second set.
	LEAQ      31(SP), R13
	ANDQ      $~31, R13
	Q4ROWTAB
	VXORPS    Y0, Y0, Y0
	VXORPS    Y1, Y1, Y1
	VXORPS    Y2, Y2, Y2
	VXORPS    Y3, Y3, Y3
	Q4PAIRM(0, Y0, Y1, Y2, Y3)
	Q4PAIRM(1, Y0, Y1, Y2, Y3)
	Q4PAIRM(2, Y0, Y1, Y2, Y3)
	Q4PAIRM(3, Y0, Y1, Y2, Y3)
	Q4BIASM(Y0, Y1, Y2, Y3)
	ADDQ      $128, DI
	ADDQ      $16, SI
	ADDQ      $4, R9
	DECQ      CX
	JZ        q4x4fa

q4x4fb:
	Q4ROWTAB
	VXORPS    Y6, Y6, Y6
	VXORPS    Y7, Y7, Y7
	VXORPS    Y10, Y10, Y10
	VXORPS    Y11, Y11, Y11
	Q4PAIRM(0, Y6, Y7, Y10, Y11)
	Q4PAIRM(1, Y6, Y7, Y10, Y11)
	SUMLV1(Y0, Y1, Y2, Y3)
	Q4PAIRM(2, Y6, Y7, Y10, Y11)
	SUMLV2(Y0, Y2)
	Q4PAIRM(3, Y6, Y7, Y10, Y11)
	SUMLV3(Y0, X0)
	Q4BIASM(Y6, Y7, Y10, Y11)
	ADDQ      $128, DI
	ADDQ      $16, SI
	ADDQ      $4, R9
	DECQ      CX
	JZ        q4x4fbz
	Q4ROWTAB
	VXORPS    Y0, Y0, Y0
	VXORPS    Y1, Y1, Y1
	VXORPS    Y2, Y2, Y2
	VXORPS    Y3, Y3, Y3
	Q4PAIRM(0, Y0, Y1, Y2, Y3)
	Q4PAIRM(1, Y0, Y1, Y2, Y3)
	SUMLV1(Y6, Y7, Y10, Y11)
	Q4PAIRM(2, Y0, Y1, Y2, Y3)
	SUMLV2(Y6, Y10)
	Q4PAIRM(3, Y0, Y1, Y2, Y3)
	SUMLV3(Y6, X6)
	Q4BIASM(Y0, Y1, Y2, Y3)
	ADDQ      $128, DI
	ADDQ      $16, SI
	ADDQ      $4, R9
	DECQ      CX
	JNZ       q4x4fb

q4x4fa:
	SUMLV1(Y0, Y1, Y2, Y3)
	SUMLV2(Y0, Y2)
	SUMLV3(Y0, X0)
	JMP       q4x4flush

q4x4fbz:
	SUMLV1(Y6, Y7, Y10, Y11)
	SUMLV2(Y6, Y10)
	SUMLV3(Y6, X6)
	JMP       q4x4flush

q4x4row:
	PREFETCHT0 (X4PFD)(DI)
	PREFETCHT0 (X4PFD+64)(DI)
	PREFETCHT0 (X4PFD/8)(SI)
	ROWDW(q4x4dwp, q4x4dwe, q4x4dwd)
	VPERMPS   Y6, Y13, Y12
	VMULPS    Q4TDX(0)(SP), Y12, Y6
	VMULPS    Q4TDX(1)(SP), Y12, Y7
	VMULPS    Q4TDX(2)(SP), Y12, Y10
	VMULPS    Q4TDX(3)(SP), Y12, Y11
	VXORPS    Y0, Y0, Y0
	VXORPS    Y1, Y1, Y1
	VXORPS    Y2, Y2, Y2
	VXORPS    Y3, Y3, Y3
	CMPQ      R8, $2
	JLT       q4x4h0
	Q4PAIRT(0)
	CMPQ      R8, $4
	JLT       q4x4h1
	Q4PAIRT(1)
	CMPQ      R8, $6
	JLT       q4x4h2
	Q4PAIRT(2)
	CMPQ      R8, $8
	JLT       q4x4h3
	Q4PAIRT(3)
	JMP       q4x4bias

q4x4h0:
	Q4HALFT(0)
	JMP       q4x4bias

q4x4h1:
	TESTQ     $1, R8
	JZ        q4x4bias
	Q4HALFT(1)
	JMP       q4x4bias

q4x4h2:
	TESTQ     $1, R8
	JZ        q4x4bias
	Q4HALFT(2)
	JMP       q4x4bias

q4x4h3:
	TESTQ     $1, R8
	JZ        q4x4bias
	Q4HALFT(3)

q4x4bias:
	VFMADD231PS Q4CF(0)(SP), Y6, Y0
	VFMADD231PS Q4CF(1)(SP), Y7, Y1
	VFMADD231PS Q4CF(2)(SP), Y10, Y2
	VFMADD231PS Q4CF(3)(SP), Y11, Y3
	SUM4
	VMOVUPS   X8, Q4ROWS(SP)(R9*4)
	ADDQ      R10, DI
	LEAQ      (SI)(R8*2), SI
	ADDQ      $4, R9
	DECQ      CX
	JNZ       q4x4row

q4x4flush:
	FLUSHROWS(Q4ROWS, q4x4flush4, q4x4flush1, q4x4done)

q4x4done:
	VZEROUPPER
	RET

// f32perm4 is kernels_avx2i8_amd64.s's f32perm.
DATA f32perm4<>+0(SB)/4, $0
DATA f32perm4<>+4(SB)/4, $2
DATA f32perm4<>+8(SB)/4, $4
DATA f32perm4<>+12(SB)/4, $6
DATA f32perm4<>+16(SB)/4, $1
DATA f32perm4<>+20(SB)/4, $3
DATA f32perm4<>+24(SB)/4, $5
DATA f32perm4<>+28(SB)/4, $7
GLOBL f32perm4<>(SB), RODATA|NOPTR, $32

// f16perm4 is kernels_avx2i8_amd64.s's f16perm.
DATA f16perm4<>+0(SB)/8, $0x0d0c090805040100
DATA f16perm4<>+8(SB)/8, $0x0f0e0b0a07060302
GLOBL f16perm4<>(SB), RODATA|NOPTR, $16

// Frame (q8avx2i8x4): column c's row scales at c·32, the row's own at
// 160, its x8 block and dx at 192 + c·288 (+0, +256), the row sums as in
// q4avx2i8x4 at 1344.
#define Q8ROWS 1344
#define Q8X(c) (192+(c)*288)
#define Q8DX(c) (192+(c)*288+256)

#define Q8COLIN(c) \
	MOVQ    ((c)*40)(BX), AX;    \
	COPY4(AX, Q8X(c));           \
	ADDQ    $128, AX;            \
	COPY4(AX, Q8X(c)+128);       \
	MOVQ    ((c)*40+24)(BX), AX; \
	VMOVUPS (AX), Y0;            \
	VMOVUPS Y0, Q8DX(c)(SP)

// Q8COL adds the row's group (Y4 weights, Y5 their magnitudes) times
// column c's activation group (offset R11) into acc.
#define Q8COL(c, acc) \
	VMOVDQU      Q8X(c)(SP)(R11*1), Y8;  \
	VPSIGNB      Y4, Y8, Y8;             \
	VPMADDUBSW   Y8, Y5, Y8;             \
	VPMADDWD     Y14, Y8, Y8;            \
	VCVTDQ2PS    Y8, Y8;                 \
	VBROADCASTSS ((c)*32)(SP)(AX*1), Y9; \
	VFMADD231PS  Y9, Y8, acc

// func q8avx2i8x4(sc, data *byte, rows, groups int, cols *[4]vnniCol)
//
// cols[c].xl is column c's x8 (natural order) here; xh and c4 are unused.
TEXT ·q8avx2i8x4(SB), $3392-40
	MOVQ         sc+0(FP), SI
	MOVQ         data+8(FP), DI
	MOVQ         rows+16(FP), CX
	MOVQ         groups+24(FP), R8
	MOVQ         cols+32(FP), BX
	Q8COLIN(0)
	Q8COLIN(1)
	Q8COLIN(2)
	Q8COLIN(3)
	MOVL         $0x00010001, AX
	VMOVD        AX, X14
	VPBROADCASTD X14, Y14
	VXORPS       Y0, Y0, Y0
	VMOVUPS      Y0, 160(SP)
	XORQ         R9, R9

q8x4row:
	PREFETCHT0 (X4PFD)(DI)
	PREFETCHT0 (X4PFD+64)(DI)
	PREFETCHT0 (X4PFD+128)(DI)
	PREFETCHT0 (X4PFD+192)(DI)
	PREFETCHT0 (X4PFD/16)(SI)
	ROWDW(q8x4dwp, q8x4dwe, q8x4dwd)
	VMULPS  Q8DX(0)(SP), Y6, Y7
	VMOVUPS Y7, 0(SP)
	VMULPS  Q8DX(1)(SP), Y6, Y7
	VMOVUPS Y7, 32(SP)
	VMULPS  Q8DX(2)(SP), Y6, Y7
	VMOVUPS Y7, 64(SP)
	VMULPS  Q8DX(3)(SP), Y6, Y7
	VMOVUPS Y7, 96(SP)
	VXORPS  Y0, Y0, Y0
	VXORPS  Y1, Y1, Y1
	VXORPS  Y2, Y2, Y2
	VXORPS  Y3, Y3, Y3
	XORQ    R11, R11
	XORQ    AX, AX
	MOVQ    R8, DX

q8x4grp:
	VMOVDQU (DI), Y4
	VPABSB  Y4, Y5
	Q8COL(0, Y0)
	Q8COL(1, Y1)
	Q8COL(2, Y2)
	Q8COL(3, Y3)
	ADDQ    $32, DI
	ADDQ    $32, R11
	ADDQ    $4, AX
	DECQ    DX
	JNZ     q8x4grp

	SUM4
	VMOVUPS X8, Q8ROWS(SP)(R9*4)
	LEAQ (SI)(R8*2), SI
	ADDQ $4, R9
	DECQ CX
	JNZ  q8x4row
	FLUSHROWS(Q8ROWS, q8x4flush4, q8x4flush1, q8x4done)

q8x4done:
	VZEROUPPER
	RET

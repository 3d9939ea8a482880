// Q4_0 × int8 four rows at a time, the lanes of the result being rows: the
// arithmetic shared by the avx2i8 path's single-column kernel (q4avx2i8,
// kernels_avx2i8_amd64.s) and its four-column kernel (q4avx2i8x4,
// batch_avx2i8_amd64.s). Both include this one text, so a column's result
// is the same bits in both by construction (DotBatch promises Dot's bits).
//
// Per group pair p (32 nibble bytes per row: the low 128-bit half group
// 2p, the high half group 2p+1) of a block of four rows:
//
//   - Q4BUILD mixes the four rows' bytes, dword by dword, into four
//     vectors C0..C3 and splits each into low and high nibbles, once for
//     all columns. In each 128-bit half, dword j of Ck holds row j's dword
//     L(j,k), where L is a Latin square (each row meets each of its dwords
//     once over k): L(·,0) = 0 1 2 3, L(·,1) = 2 3 0 1, L(·,2) = 1 0 3 2,
//     L(·,3) = 3 2 1 0. Four VPBLENDD pair rows 0/1 and 2/3 (E01 = w0 d0,
//     w1 d1, w0 d2, w1 d3; E10 the other dwords; E23, E32 likewise), then
//     C0 is one more VPBLENDD and C1..C3 one VSHUFPS each (two dwords from
//     E01/E10, two from E23/E32).
//   - Q4SUM multiplies Ck's nibbles by the column's activation bytes
//     permuted the same way (dword j of permutation k is the activation's
//     dword L(j,k): one VPSHUFD, done once per call by Q4COLPREP) and adds the
//     eight VPMADDUBSW products as int16: each dword lane j then holds two
//     int16 partial sums of row j only, and one VPMADDWD against ones
//     leaves, per 128-bit half, the four rows' exact int32 group sums.
//     Bounds: a VPMADDUBSW word is two products of a nibble (0..15) and an
//     int8 in −127..127, at most 3810 in magnitude; eight of them, 30480,
//     stay inside int16.
//   - The group's −8·Σx bias is added in the integers (VPADDD), so pad
//     nibbles (8) cancel exactly whatever activation follows a tile.
//   - Then one VCVTDQ2PS, and one FMA (a multiply for p = 0) into the
//     column's accumulator by the table T(p) = the four rows' f16 scales
//     for groups 2p and 2p+1 times the column's activation scales.
//
// At the block's end the accumulator's two halves are added (lane j: row
// j) and added into y[j]. No float is rounded before the scale multiply,
// and the float order per row is fixed: ((…(s0·t0 + s1·t1) + …) in pair
// order per half, then low half + high half, then + y.
//
// Registers: Y0..Y3 accumulators; Y4..Y11 the nibbles (C0: Y4/Y5, C1:
// Y8/Y9, C2: Y10/Y11, C3: Y6/Y7, low/high); Y12..Y14 scratch; Y15 the
// 0x0f byte mask.

// Q4BUILD loads group pair p of the block's rows (DI, R10 bytes apart,
// R11 = 3·R10) into w0..w3 (Y4, Y6, Y8, Y10; or X4.. for a lone last group,
// whose upper halves are then zero) and leaves C0..C3's nibbles split.
#define Q4BUILD(p, w0, w1, w2, w3) \
	VMOVDQU  (32*(p))(DI), w0;          \
	VMOVDQU  (32*(p))(DI)(R10*1), w1;   \
	VMOVDQU  (32*(p))(DI)(R10*2), w2;   \
	VMOVDQU  (32*(p))(DI)(R11*1), w3;   \
	VPBLENDD $0xaa, Y6, Y4, Y12;        \
	VPBLENDD $0x55, Y6, Y4, Y13;        \
	VPBLENDD $0xaa, Y10, Y8, Y14;       \
	VPBLENDD $0x55, Y10, Y8, Y6;        \
	VPBLENDD $0xcc, Y14, Y12, Y4;       \
	VSHUFPS  $0x4e, Y14, Y12, Y8;       \
	VSHUFPS  $0xb1, Y6, Y13, Y10;       \
	VSHUFPS  $0x1b, Y6, Y13, Y6;        \
	VPSRLW   $4, Y4, Y5;                \
	VPSRLW   $4, Y8, Y9;                \
	VPSRLW   $4, Y10, Y11;              \
	VPSRLW   $4, Y6, Y7;                \
	VPAND    Y15, Y4, Y4;               \
	VPAND    Y15, Y5, Y5;               \
	VPAND    Y15, Y8, Y8;               \
	VPAND    Y15, Y9, Y9;               \
	VPAND    Y15, Y10, Y10;             \
	VPAND    Y15, Y11, Y11;             \
	VPAND    Y15, Y6, Y6;               \
	VPAND    Y15, Y7, Y7

// Q4XR is the frame offset of a column's permutation k of its activation
// pair p, low (h = 0) or high (h = 1) nibbles' bytes, for the column block
// at col; Q4BP its bias pair (int32, group 2p's sum in the low four lanes,
// 2p+1's in the high four) and Q4DXP its activation scales (same layout).
#define Q4XR(col, p, k, h) ((col)+(((p)*4+(k))*2+(h))*32)
#define Q4BP(col, p) ((col)+1024+(p)*32)
#define Q4DXP(col, p) ((col)+1152+(p)*32)
#define Q4COLBYTES 1280

// Q4SUM leaves in Y12 the four rows' exact int32 sums (bias included) of
// group pair p against the column block at col, as floats.
#define Q4SUM(col, p) \
	VPMADDUBSW (Q4XR(col, p, 0, 0))(SP), Y4, Y12;  \
	VPMADDUBSW (Q4XR(col, p, 0, 1))(SP), Y5, Y13;  \
	VPADDW     Y13, Y12, Y12;                      \
	VPMADDUBSW (Q4XR(col, p, 1, 0))(SP), Y8, Y13;  \
	VPMADDUBSW (Q4XR(col, p, 1, 1))(SP), Y9, Y14;  \
	VPADDW     Y14, Y13, Y13;                      \
	VPADDW     Y13, Y12, Y12;                      \
	VPMADDUBSW (Q4XR(col, p, 2, 0))(SP), Y10, Y13; \
	VPMADDUBSW (Q4XR(col, p, 2, 1))(SP), Y11, Y14; \
	VPADDW     Y14, Y13, Y13;                      \
	VPMADDUBSW (Q4XR(col, p, 3, 0))(SP), Y6, Y14;  \
	VPADDW     Y14, Y13, Y13;                      \
	VPMADDUBSW (Q4XR(col, p, 3, 1))(SP), Y7, Y14;  \
	VPADDW     Y14, Y13, Y13;                      \
	VPADDW     Y13, Y12, Y12;                      \
	VPMADDWD   q4ones<>(SB), Y12, Y12;             \
	VPADDD     (Q4BP(col, p))(SP), Y12, Y12;       \
	VCVTDQ2PS  Y12, Y12

// Q4ACC0 and Q4ACC start and continue a column's accumulator acc with the
// sums in Y12 times the table at t(SP).
#define Q4ACC0(t, acc) \
	VMULPS (t)(SP), Y12, acc

#define Q4ACC(t, acc) \
	VFMADD231PS (t)(SP), Y12, acc

// Q4COLPERMS writes the four permutations of one nibble view (h = 0 low,
// 1 high) of the column's pair p, read at src, into column block col.
// Clobbers Y12, Y13.
#define Q4COLPERMS(col, p, src, h) \
	VMOVDQU (32*(p))(src), Y12;           \
	VMOVDQU Y12, (Q4XR(col, p, 0, h))(SP); \
	VPSHUFD $0x4e, Y12, Y13;              \
	VMOVDQU Y13, (Q4XR(col, p, 1, h))(SP); \
	VPSHUFD $0xb1, Y12, Y13;              \
	VMOVDQU Y13, (Q4XR(col, p, 2, h))(SP); \
	VPSHUFD $0x1b, Y12, Y13;              \
	VMOVDQU Y13, (Q4XR(col, p, 3, h))(SP)

// Q4COLPREP1 writes column block col's pair p from the column's xl, xh,
// c4 and dx (pointers in xl, xh, c4, dx): the four permutations of both
// nibble views, the group sums of c4's lanes (VPSHUFD and VPADDD within
// each half), and dx[2p], dx[2p+1] spread over the halves. Clobbers
// Y12..Y14.
#define Q4COLPREP1(col, p, xl, xh, c4, dx) \
	Q4COLPERMS(col, p, xl, 0); \
	Q4COLPERMS(col, p, xh, 1); \
	VMOVDQU      (32*(p))(c4), Y12;            \
	VPSHUFD      $0x4e, Y12, Y13;              \
	VPADDD       Y13, Y12, Y12;                \
	VPSHUFD      $0xb1, Y12, Y13;              \
	VPADDD       Y13, Y12, Y12;                \
	VMOVDQU      Y12, (Q4BP(col, p))(SP);      \
	VBROADCASTSS (8*(p))(dx), X12;             \
	VBROADCASTSS (8*(p)+4)(dx), X13;           \
	VINSERTF128  $1, X13, Y12, Y12;            \
	VMOVUPS      Y12, (Q4DXP(col, p))(SP)

#define Q4COLPREP(col, xl, xh, c4, dx) \
	Q4COLPREP1(col, 0, xl, xh, c4, dx); \
	Q4COLPREP1(col, 1, xl, xh, c4, dx); \
	Q4COLPREP1(col, 2, xl, xh, c4, dx); \
	Q4COLPREP1(col, 3, xl, xh, c4, dx)

// Q4SCALES puts the block's row scales, as floats, into Y4..Y7 (Y4+p:
// lanes 0–3 rows 0–3 of group 2p, lanes 4–7 of group 2p+1): rows' eight
// f16 scales at s0..s3 (16 bytes each, ANDed with the mask at (R15) that
// zeroes lanes past the row's groups) transposed by word and dword
// unpacks. Clobbers Y12..Y14.
#define Q4SCALES(s0, s1, s2, s3) \
	VMOVDQU    s0, X12;          \
	VPAND      (R15), X12, X12;  \
	VMOVDQU    s1, X13;          \
	VPAND      (R15), X13, X13;  \
	VPUNPCKLWD X13, X12, X14;    \
	VPUNPCKHWD X13, X12, X12;    \
	VMOVDQU    s2, X13;          \
	VPAND      (R15), X13, X13;  \
	VMOVDQU    s3, X4;           \
	VPAND      (R15), X4, X4;    \
	VPUNPCKLWD X4, X13, X5;      \
	VPUNPCKHWD X4, X13, X13;     \
	VPUNPCKLDQ X5, X14, X4;      \
	VPUNPCKHDQ X5, X14, X5;      \
	VPUNPCKLDQ X13, X12, X6;     \
	VPUNPCKHDQ X13, X12, X7;     \
	VCVTPH2PS  X4, Y4;           \
	VCVTPH2PS  X5, Y5;           \
	VCVTPH2PS  X6, Y6;           \
	VCVTPH2PS  X7, Y7

// Q4TAB writes column block col's tables for this block, T(p) = Y(4+p) ·
// its activation scales, at t(SP) + p·32. Clobbers Y12.
#define Q4TAB(col, t) \
	VMULPS  (Q4DXP(col, 0))(SP), Y4, Y12; \
	VMOVUPS Y12, (t)(SP);                 \
	VMULPS  (Q4DXP(col, 1))(SP), Y5, Y12; \
	VMOVUPS Y12, (t+32)(SP);              \
	VMULPS  (Q4DXP(col, 2))(SP), Y6, Y12; \
	VMOVUPS Y12, (t+64)(SP);              \
	VMULPS  (Q4DXP(col, 3))(SP), Y7, Y12; \
	VMOVUPS Y12, (t+96)(SP)

// Q4HALVES leaves row j's sum in lane j of x (acc's low half): low half +
// high half. Clobbers X12.
#define Q4HALVES(acc, x) \
	VEXTRACTF128 $1, acc, X12; \
	VADDPS       X12, x, x

// Q4SCCOPY copies n rows' G (R8) f16 scales from SI (R13 = 2G bytes
// apart) to the frame's 16-byte slots at slot(SP), one scale at a time, so
// nothing past the scale array is read; a slot's lanes past G keep the
// zeros stored at entry. Clobbers AX, DX, R10, R11, R14.
#define Q4SCCOPY(n, slot, lrow, lel) \
	MOVQ    SI, AX;            \
	LEAQ    (slot)(SP), DX;    \
	MOVQ    $(n), R10;         \
lrow: \
	XORQ    R14, R14;          \
lel: \
	MOVWLZX (AX)(R14*2), R11;  \
	MOVW    R11, (DX)(R14*2);  \
	INCQ    R14;               \
	CMPQ    R14, R8;           \
	JLT     lel;               \
	ADDQ    R13, AX;           \
	ADDQ    $16, DX;           \
	DECQ    R10;               \
	JNZ     lrow

// Q4SCROWS puts the scales of the general loop's next block (CX rows left,
// 2G = R13 bytes apart at SI) into Y4..Y7 through Q4SCALES, then jumps to
// tab: four rows in place while a 16-byte load from the block's last row
// cannot pass the scale array's end (rows left · 2G ≥ 6G + 16), masked to
// their G lanes; the last blocks copy them one at a time into the frame's
// 16-byte slots at slot(SP); fewer than four rows left run as one row
// repeated (R10 = R11 = 0, so the block reads row 0 four times). Both Q4
// kernels expand it, so their short rows read the same scales the same
// way. The other arguments are labels, unique per expansion. Clobbers AX,
// DX, R10, R11, R14 and what Q4SCALES does.
#define Q4SCROWS(slot, one, slow, r4, e4, r1, e1, tab) \
	CMPQ    CX, $4;                \
	JLT     one;                   \
	MOVQ    CX, AX;                \
	IMULQ   R13, AX;               \
	LEAQ    16(R13)(R13*2), DX;    \
	CMPQ    AX, DX;                \
	JLT     slow;                  \
	LEAQ    (R13)(R13*2), DX;      \
	Q4SCALES((SI), (SI)(R13*1), (SI)(R13*2), (SI)(DX*1)); \
	JMP     tab;                   \
slow: \
	Q4SCCOPY(4, slot, r4, e4);     \
	MOVQ    R12, R10;              \
	LEAQ    (R12)(R12*2), R11;     \
	Q4SCALES((slot)(SP), (slot+16)(SP), (slot+32)(SP), (slot+48)(SP)); \
	JMP     tab;                   \
one: \
	Q4SCCOPY(1, slot, r1, e1);     \
	XORQ    R10, R10;              \
	XORQ    R11, R11;              \
	Q4SCALES((slot)(SP), (slot)(SP), (slot)(SP), (slot)(SP))

// Q4ENTRY is both Q4 kernels' common entry once their columns are
// prepared: the nibble mask in Y15, the frame's 32 scale-slot bytes at
// slot(SP) zeroed (lanes past a short row's groups stay 0), R12 = a row's
// nibble bytes (16G), R13 = its scale bytes (2G), R15 = the mask keeping G
// scales (mask is the file's sc16mask copy), R10/R11 = the block's row
// offsets 1·16G and 3·16G; tiles that are not full-width (G ≠ 8) or have
// fewer than four rows go to gen, the rest fall through to the full-row
// loop. Clobbers AX, Y12.
#define Q4ENTRY(slot, mask, gen) \
	MOVL         $0x0f0f0f0f, AX;    \
	VMOVD        AX, X15;            \
	VPBROADCASTD X15, Y15;           \
	VPXOR        Y12, Y12, Y12;      \
	VMOVDQU      Y12, slot(SP);      \
	VMOVDQU      Y12, (slot+32)(SP); \
	MOVQ         R8, R12;            \
	SHLQ         $4, R12;            \
	LEAQ         (R8)(R8*1), R13;    \
	LEAQ         mask+16(SB), R15;   \
	SUBQ         R13, R15;           \
	MOVQ         R12, R10;           \
	LEAQ         (R12)(R12*2), R11;  \
	CMPQ         R8, $8;             \
	JNE          gen;                \
	CMPQ         CX, $4;             \
	JLT          gen

// Q4PF7 issues op (a prefetch instruction) for the block d bytes ahead of
// DI, its first seven 64-byte lines, then for the scale line d/8 ahead of
// SI; Q4PF8 covers all eight lines of a full 512-byte block. They are the
// Q4 loops' per-block prefetches: the decode kernel passes PREFETCHNTA,
// the four-column kernel PREFETCHT0 (docs/PERFORMANCE.md, "Session 6: the
// stream").
#define Q4PFLINES(op, d) \
	op (d+0)(DI);   \
	op (d+64)(DI);  \
	op (d+128)(DI); \
	op (d+192)(DI); \
	op (d+256)(DI); \
	op (d+320)(DI); \
	op (d+384)(DI)
#define Q4PF7(op, d) \
	Q4PFLINES(op, d); \
	op (d/8)(SI)
#define Q4PF8(op, d) \
	Q4PFLINES(op, d); \
	op (d+448)(DI);   \
	op (d/8)(SI)

// Q4GENPAIRS runs a general-loop block's group pairs through PAIR (the
// kernel's per-pair macro: S1PAIR or X4PAIR, argument k its frame
// displacement) for G = R8 groups: the full pairs on ymm, a lone last group
// on xmm (upper halves zero), then falls through to gend. Both Q4 kernels
// expand it, so their short rows take the same pairs the same way. The
// label arguments are unique per expansion.
#define Q4GENPAIRS(PAIR, k, gh0, gh1, gh2, gh3, gend) \
	CMPQ    R8, $2;                    \
	JLT     gh0;                       \
	PAIR(k, 0, Y4, Y6, Y8, Y10, Q4ACC0); \
	CMPQ    R8, $4;                    \
	JLT     gh1;                       \
	PAIR(k, 1, Y4, Y6, Y8, Y10, Q4ACC); \
	CMPQ    R8, $6;                    \
	JLT     gh2;                       \
	PAIR(k, 2, Y4, Y6, Y8, Y10, Q4ACC); \
	CMPQ    R8, $8;                    \
	JLT     gh3;                       \
	PAIR(k, 3, Y4, Y6, Y8, Y10, Q4ACC); \
	JMP     gend;                      \
gh0: \
	PAIR(k, 0, X4, X6, X8, X10, Q4ACC0); \
	JMP     gend;                      \
gh1: \
	TESTQ   $1, R8;                    \
	JZ      gend;                      \
	PAIR(k, 1, X4, X6, X8, X10, Q4ACC); \
	JMP     gend;                      \
gh2: \
	TESTQ   $1, R8;                    \
	JZ      gend;                      \
	PAIR(k, 2, X4, X6, X8, X10, Q4ACC); \
	JMP     gend;                      \
gh3: \
	TESTQ   $1, R8;                    \
	JZ      gend;                      \
	PAIR(k, 3, X4, X6, X8, X10, Q4ACC)

// Q4FULLPAIRS runs a full-row block's four group pairs through PAIR (as in
// Q4GENPAIRS), the first starting the accumulators.
#define Q4FULLPAIRS(PAIR, k) \
	PAIR(k, 0, Y4, Y6, Y8, Y10, Q4ACC0); \
	PAIR(k, 1, Y4, Y6, Y8, Y10, Q4ACC);  \
	PAIR(k, 2, Y4, Y6, Y8, Y10, Q4ACC);  \
	PAIR(k, 3, Y4, Y6, Y8, Y10, Q4ACC)

// Q4NEXTFULL steps the full-row loop to its next block of four rows (512
// nibble bytes at DI, 64 scale bytes at SI, 16 output bytes at R9) and
// loops back to full while four rows are left.
#define Q4NEXTFULL(full) \
	ADDQ $512, DI; \
	ADDQ $64, SI;  \
	ADDQ $16, R9;  \
	SUBQ $4, CX;   \
	CMPQ CX, $4;   \
	JGE  full

// Q4NEXTGEN steps the general loop past a block of four rows (G groups:
// R12 nibble and R13 scale bytes a row) and goes back to gen.
#define Q4NEXTGEN(gen) \
	LEAQ (DI)(R12*4), DI; \
	LEAQ (SI)(R13*4), SI; \
	ADDQ $16, R9;         \
	SUBQ $4, CX;          \
	JMP  gen

// Q4ALIGNJUMP puts (−SP) mod 32 in r and jumps to k8, k16 or k24 when it
// is 8, 16 or 24, falling through when it is 0: both Q4 kernels keep one
// copy of their body per SP mod 32, each reading the frame at the
// displacement that makes it 32-byte aligned (Go aligns SP to 8 only).
#define Q4ALIGNJUMP(r, k8, k16, k24) \
	MOVQ SP, r;   \
	NEGQ r;       \
	ANDQ $31, r;  \
	CMPQ r, $8;   \
	JEQ  k8;      \
	CMPQ r, $16;  \
	JEQ  k16;     \
	CMPQ r, $24;  \
	JEQ  k24

// q4ones: int16 ones for VPMADDWD (Q4SUM). File-static, so each kernel
// file including this header gets its own copy.
DATA q4ones<>+0(SB)/8, $0x0001000100010001
DATA q4ones<>+8(SB)/8, $0x0001000100010001
DATA q4ones<>+16(SB)/8, $0x0001000100010001
DATA q4ones<>+24(SB)/8, $0x0001000100010001
GLOBL q4ones<>(SB), RODATA|NOPTR, $32

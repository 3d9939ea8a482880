//go:build !noasm

#include "textflag.h"
#include "q4rows_amd64.h"

// Multi-column kernels of the avx2i8 path for DotBatch: one tile against
// four int8 activation columns. Each weight is loaded (and for Q4 mixed
// and split into nibbles; for Q8 its magnitude taken) once for the four.
// At entry each column's activation block is copied (Q4: in the permuted
// layout q4rows_amd64.h describes) into the frame, so the inner loop
// addresses all four columns off SP instead of through twelve pointers.

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

// YSCATn adds X0's first n lanes (columns 0..n-1) into each column's y
// at row offset R9, one column after another. Clobbers R12, X1, X2.
#define YSCAT2 \
	MOVQ         32(BX), R12;       \
	VADDSS       (R12)(R9*1), X0, X1; \
	VMOVSS       X1, (R12)(R9*1);   \
	VMOVSHDUP    X0, X2;            \
	MOVQ         72(BX), R12;       \
	VADDSS       (R12)(R9*1), X2, X1; \
	VMOVSS       X1, (R12)(R9*1)

#define YSCAT3 \
	YSCAT2;                         \
	VMOVHLPS     X0, X0, X2;        \
	MOVQ         112(BX), R12;      \
	VADDSS       (R12)(R9*1), X2, X1; \
	VMOVSS       X1, (R12)(R9*1)

#define YSCAT4 \
	YSCAT3;                         \
	VPERMILPS    $0xff, X0, X2;     \
	MOVQ         152(BX), R12;      \
	VADDSS       (R12)(R9*1), X2, X1; \
	VMOVSS       X1, (R12)(R9*1)

// YADDSn add the first n columns' four transposed rows (X0..X3) into
// their outputs (YADD4).
#define YADDS2 \
	YADD4(0, X0);  \
	YADD4(40, X1)

#define YADDS3 \
	YADDS2;        \
	YADD4(80, X2)

#define YADDS4 \
	YADDS3;        \
	YADD4(120, X3)

// FLUSHROWS adds the row sums stored at off(SP) (four floats, columns
// 0..3, per row) into the first n columns' outputs, n being the count of
// YADDS (YADDSn) and SCAT (YSCATn): four rows at a time after a 4×4
// transpose, the last rows mod 4 one at a time. Jumps to done.
#define FLUSHROWS(off, YADDS, SCAT, l4, l1, done) \
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
	YADDS;                \
	ADDQ      $16, R9;    \
	SUBQ      $4, CX;     \
	CMPQ      CX, $4;     \
	JGE       l4;         \
l1: \
	TESTQ   CX, CX;       \
	JZ      done;         \
	VMOVUPS off(SP)(R9*4), X0; \
	SCAT;                 \
	ADDQ    $4, R9;       \
	DECQ    CX;           \
	JMP     l1

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
// q4avx2i8's blocks of four rows (q4rows_amd64.h) against four columns:
// each block's group pairs are loaded and mixed into the Latin-square
// vectors once (Q4BUILD) for the four columns, and each column's sums go
// through the same instructions as in the single-column kernel, so every
// column gets Dot's bits for every tile shape. The last rows mod 4 run
// one at a time as blocks of one row repeated (stride 0), keeping lane 0.
//
// Frame, from SP+k: column c's block (Q4COLPREP) at c·1280; its tables
// for the current block at 5120 + c·128; 64 bytes of scale slots at 5632.
// Go aligns SP to 8 bytes only, and with the frame 8, 16 or 24 bytes off
// a 32-byte boundary half of the loop's 32-byte frame loads cross a cache
// line. So the kernel is four copies of one body (X4BODY), one per
// k ∈ {0, 8, 16, 24}, each addressing the frame SP-relative at the
// constant displacement k that makes SP+k 32-byte aligned; the entry
// picks the copy from SP mod 32 (docs/PERFORMANCE.md, "Session 7").
// Reading the frame through another base register (SP rounded up) was
// slower from DRAM on Zen 3 ("Session 6: the schedule").
#define X4COL(k, c) ((k)+(c)*1280)
#define X4T(k, c) ((k)+5120+(c)*128)
#define X4SLOT(k) ((k)+5632)

// X2PAIR, X3PAIR and X4PAIR run group pair p of the block against the
// first two, three or four columns (the first pair starts the
// accumulators, Y0 upward); w0..w3 as in Q4BUILD. Each adds one column to
// the one before, so column c's instructions are the same whatever the
// count: every column gets Dot's bits.
#define X2PAIR(k, p, w0, w1, w2, w3, ACC) \
	Q4BUILD(p, w0, w1, w2, w3);      \
	Q4SUM(X4COL(k, 0), p);           \
	ACC(X4T(k, 0)+32*(p), Y0);       \
	Q4SUM(X4COL(k, 1), p);           \
	ACC(X4T(k, 1)+32*(p), Y1)

#define X3PAIR(k, p, w0, w1, w2, w3, ACC) \
	X2PAIR(k, p, w0, w1, w2, w3, ACC); \
	Q4SUM(X4COL(k, 2), p);           \
	ACC(X4T(k, 2)+32*(p), Y2)

#define X4PAIR(k, p, w0, w1, w2, w3, ACC) \
	X3PAIR(k, p, w0, w1, w2, w3, ACC); \
	Q4SUM(X4COL(k, 3), p);           \
	ACC(X4T(k, 3)+32*(p), Y3)

// X2TABS..X4TABS write the columns' tables from the block's row scales
// (Y4..Y7, Q4SCALES).
#define X2TABS(k) \
	Q4TAB(X4COL(k, 0), X4T(k, 0)); \
	Q4TAB(X4COL(k, 1), X4T(k, 1))

#define X3TABS(k) \
	X2TABS(k); \
	Q4TAB(X4COL(k, 2), X4T(k, 2))

#define X4TABS(k) \
	X3TABS(k); \
	Q4TAB(X4COL(k, 3), X4T(k, 3))

// X4OUT4 adds column c's four row sums (acc, its low half x) into its y
// (pointer at c·40+32(BX)) at row offset R9; X4OUT1 only lane 0.
#define X4OUT4(c, acc, x) \
	Q4HALVES(acc, x);               \
	MOVQ    ((c)*40+32)(BX), R14;   \
	VADDPS  (R14)(R9*1), x, x;      \
	VMOVUPS x, (R14)(R9*1)

#define X4OUT1(c, acc, x) \
	Q4HALVES(acc, x);               \
	MOVQ    ((c)*40+32)(BX), R14;   \
	VADDSS  (R14)(R9*1), x, x;      \
	VMOVSS  x, (R14)(R9*1)

// XnOUTS(OUT) passes each of the first n columns' accumulators to OUT
// (X4OUT4 or X4OUT1).
#define X2OUTS(OUT) \
	OUT(0, Y0, X0); \
	OUT(1, Y1, X1)

#define X3OUTS(OUT) \
	X2OUTS(OUT); \
	OUT(2, Y2, X2)

#define X4OUTS(OUT) \
	X3OUTS(OUT); \
	OUT(3, Y3, X3)

// X4COLPREP fills column c's block from cols[c] (at BX; vnniCol: xl, xh,
// c4, dx, y at +0..+32).
#define X4COLPREP(k, c) \
	MOVQ ((c)*40)(BX), AX;    \
	MOVQ ((c)*40+8)(BX), DX;  \
	MOVQ ((c)*40+16)(BX), R10; \
	MOVQ ((c)*40+24)(BX), R11; \
	Q4COLPREP(X4COL(k, c), AX, DX, R10, R11)

// XnCOLPREPS fill the first n columns' blocks.
#define X2COLPREPS(k) \
	X4COLPREP(k, 0); \
	X4COLPREP(k, 1)

#define X3COLPREPS(k) \
	X2COLPREPS(k); \
	X4COLPREP(k, 2)

#define X4COLPREPS(k) \
	X3COLPREPS(k); \
	X4COLPREP(k, 3)

// XBODY is the whole kernel for frame displacement k, from the column
// prep to the jump to done, for the column count whose macros PREPS,
// TABS, PAIR and OUTS are (X2…, X3… or X4…); the other arguments are its
// labels, unique per expansion. The frame layout is the four-column one
// whatever the count.
#define XBODY(k, PREPS, TABS, PAIR, OUTS, done, full, gen, gtab, gh0, gh1, gh2, gh3, gend, gend1, g1, g4slow, g4r, g4e, g1r, g1e) \
	PREPS(k);                          \
	XORQ       R9, R9;                 \
	Q4ENTRY(X4SLOT(k), sc16mask4<>, gen); \
full: \
	Q4PF8(PREFETCHT0, X4PFD);          \
	Q4SCALES((SI), 16(SI), 32(SI), 48(SI)); \
	TABS(k);                           \
	Q4FULLPAIRS(PAIR, k);              \
	OUTS(X4OUT4);                      \
	Q4NEXTFULL(full); \
gen: \
	TESTQ CX, CX;                      \
	JZ    done;                        \
	Q4PF7(PREFETCHT0, X4PFD);          \
	Q4SCROWS(X4SLOT(k), g1, g4slow, g4r, g4e, g1r, g1e, gtab); \
gtab: \
	TABS(k);                           \
	Q4GENPAIRS(PAIR, k, gh0, gh1, gh2, gh3, gend); \
gend: \
	CMPQ    CX, $4;                    \
	JLT     gend1;                     \
	OUTS(X4OUT4);                      \
	Q4NEXTGEN(gen); \
gend1: \
	OUTS(X4OUT1);                      \
	ADDQ    R12, DI;                   \
	ADDQ    R13, SI;                   \
	ADDQ    $4, R9;                    \
	DECQ    CX;                        \
	JMP     gen

// X4BODY is XBODY for four columns (q4avx2i8x4).
#define X4BODY(k, done, full, gen, gtab, gh0, gh1, gh2, gh3, gend, gend1, g1, g4slow, g4r, g4e, g1r, g1e) \
	XBODY(k, X4COLPREPS, X4TABS, X4PAIR, X4OUTS, done, full, gen, gtab, gh0, gh1, gh2, gh3, gend, gend1, g1, g4slow, g4r, g4e, g1r, g1e)

// XENTRY loads the arguments every Q4 column-count kernel takes (sc,
// data, rows, groups, cols) and jumps to the copy of its body for SP mod
// 32 (Q4ALIGNJUMP), falling through to the k = 0 copy.
#define XENTRY(k8, k16, k24) \
	MOVQ         sc+0(FP), SI;      \
	MOVQ         data+8(FP), DI;    \
	MOVQ         rows+16(FP), CX;   \
	MOVQ         groups+24(FP), R8; \
	MOVQ         cols+32(FP), BX;   \
	Q4ALIGNJUMP(AX, k8, k16, k24)

// The frame is the 5696 bytes above plus 24 for the largest k.
TEXT ·q4avx2i8x4(SB), $5720-40
	XENTRY(q4x4k8, q4x4k16, q4x4k24)
	X4BODY(0, q4x4done, q4x4full0, q4x4gen0, q4x4gtab0, q4x4gh00, q4x4gh10, q4x4gh20, q4x4gh30, q4x4gend0, q4x4gendone0, q4x4g10, q4x4g4slow0, q4x4g4r0, q4x4g4e0, q4x4g1r0, q4x4g1e0)

q4x4k8:
	X4BODY(8, q4x4done, q4x4full8, q4x4gen8, q4x4gtab8, q4x4gh08, q4x4gh18, q4x4gh28, q4x4gh38, q4x4gend8, q4x4gendone8, q4x4g18, q4x4g4slow8, q4x4g4r8, q4x4g4e8, q4x4g1r8, q4x4g1e8)

q4x4k16:
	X4BODY(16, q4x4done, q4x4full16, q4x4gen16, q4x4gtab16, q4x4gh016, q4x4gh116, q4x4gh216, q4x4gh316, q4x4gend16, q4x4gendone16, q4x4g116, q4x4g4slow16, q4x4g4r16, q4x4g4e16, q4x4g1r16, q4x4g1e16)

q4x4k24:
	X4BODY(24, q4x4done, q4x4full24, q4x4gen24, q4x4gtab24, q4x4gh024, q4x4gh124, q4x4gh224, q4x4gh324, q4x4gend24, q4x4gendone24, q4x4g124, q4x4g4slow24, q4x4g4r24, q4x4g4e24, q4x4g1r24, q4x4g1e24)

q4x4done:
	VZEROUPPER
	RET

// q4avx2i8x2 and q4avx2i8x3 are q4avx2i8x4 for two and three columns (a
// server tick with two or three clients decoding, a prompt's last B mod 4
// columns): one pass over the tile, so its look-ahead keeps the DRAM
// stream going for all of them, where one q4avx2i8 call per column
// stalled it while the second and third walked the tile from L1. Same
// frame as q4avx2i8x4.
TEXT ·q4avx2i8x2(SB), $5720-40
	XENTRY(q4x2k8, q4x2k16, q4x2k24)
	XBODY(0, X2COLPREPS, X2TABS, X2PAIR, X2OUTS, q4x2done, q4x2full0, q4x2gen0, q4x2gtab0, q4x2gh00, q4x2gh10, q4x2gh20, q4x2gh30, q4x2gend0, q4x2gendone0, q4x2g10, q4x2g4slow0, q4x2g4r0, q4x2g4e0, q4x2g1r0, q4x2g1e0)

q4x2k8:
	XBODY(8, X2COLPREPS, X2TABS, X2PAIR, X2OUTS, q4x2done, q4x2full8, q4x2gen8, q4x2gtab8, q4x2gh08, q4x2gh18, q4x2gh28, q4x2gh38, q4x2gend8, q4x2gendone8, q4x2g18, q4x2g4slow8, q4x2g4r8, q4x2g4e8, q4x2g1r8, q4x2g1e8)

q4x2k16:
	XBODY(16, X2COLPREPS, X2TABS, X2PAIR, X2OUTS, q4x2done, q4x2full16, q4x2gen16, q4x2gtab16, q4x2gh016, q4x2gh116, q4x2gh216, q4x2gh316, q4x2gend16, q4x2gendone16, q4x2g116, q4x2g4slow16, q4x2g4r16, q4x2g4e16, q4x2g1r16, q4x2g1e16)

q4x2k24:
	XBODY(24, X2COLPREPS, X2TABS, X2PAIR, X2OUTS, q4x2done, q4x2full24, q4x2gen24, q4x2gtab24, q4x2gh024, q4x2gh124, q4x2gh224, q4x2gh324, q4x2gend24, q4x2gendone24, q4x2g124, q4x2g4slow24, q4x2g4r24, q4x2g4e24, q4x2g1r24, q4x2g1e24)

q4x2done:
	VZEROUPPER
	RET

TEXT ·q4avx2i8x3(SB), $5720-40
	XENTRY(q4x3k8, q4x3k16, q4x3k24)
	XBODY(0, X3COLPREPS, X3TABS, X3PAIR, X3OUTS, q4x3done, q4x3full0, q4x3gen0, q4x3gtab0, q4x3gh00, q4x3gh10, q4x3gh20, q4x3gh30, q4x3gend0, q4x3gendone0, q4x3g10, q4x3g4slow0, q4x3g4r0, q4x3g4e0, q4x3g1r0, q4x3g1e0)

q4x3k8:
	XBODY(8, X3COLPREPS, X3TABS, X3PAIR, X3OUTS, q4x3done, q4x3full8, q4x3gen8, q4x3gtab8, q4x3gh08, q4x3gh18, q4x3gh28, q4x3gh38, q4x3gend8, q4x3gendone8, q4x3g18, q4x3g4slow8, q4x3g4r8, q4x3g4e8, q4x3g1r8, q4x3g1e8)

q4x3k16:
	XBODY(16, X3COLPREPS, X3TABS, X3PAIR, X3OUTS, q4x3done, q4x3full16, q4x3gen16, q4x3gtab16, q4x3gh016, q4x3gh116, q4x3gh216, q4x3gh316, q4x3gend16, q4x3gendone16, q4x3g116, q4x3g4slow16, q4x3g4r16, q4x3g4e16, q4x3g1r16, q4x3g1e16)

q4x3k24:
	XBODY(24, X3COLPREPS, X3TABS, X3PAIR, X3OUTS, q4x3done, q4x3full24, q4x3gen24, q4x3gtab24, q4x3gh024, q4x3gh124, q4x3gh224, q4x3gh324, q4x3gend24, q4x3gendone24, q4x3g124, q4x3g4slow24, q4x3g4r24, q4x3g4e24, q4x3g1r24, q4x3g1e24)

q4x3done:
	VZEROUPPER
	RET

// Frame (q8avx2i8x2..x4, the four-column layout whatever the count):
// column c's row scales at c·32, the row's own at 160, its x8 block and dx
// at 192 + c·288 (+0, +256), the row sums (four floats per row, columns
// 0..3; FLUSHROWS) at 1344.
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

// Q8TAB writes column c's scale table for the row (row scales Y6 × its
// activation scales) at c·32(SP).
#define Q8TAB(c) \
	VMULPS  Q8DX(c)(SP), Y6, Y7; \
	VMOVUPS Y7, ((c)*32)(SP)

// The Q8 column-count macros, each the one before plus a column (so
// column c's instructions are the same at every count, and each column
// keeps Dot's bits): Q8nCOLINS copy the first n columns into the frame,
// Q8nTABS write their scale tables, Q8nZERO clears their accumulators
// (Y0 upward) for a row, Q8nCOLS run a group of the row against them.
// Q8nIDLE clears, once at entry, the accumulators of the columns past n,
// which SUM4 still adds (into lanes no one reads): zeros, where stale
// frame bytes could be denormals or NaNs.
#define Q82COLINS Q8COLIN(0); Q8COLIN(1)
#define Q83COLINS Q82COLINS; Q8COLIN(2)
#define Q84COLINS Q83COLINS; Q8COLIN(3)
#define Q82TABS Q8TAB(0); Q8TAB(1)
#define Q83TABS Q82TABS; Q8TAB(2)
#define Q84TABS Q83TABS; Q8TAB(3)
#define Q82ZERO VXORPS Y0, Y0, Y0; VXORPS Y1, Y1, Y1
#define Q83ZERO Q82ZERO; VXORPS Y2, Y2, Y2
#define Q84ZERO Q83ZERO; VXORPS Y3, Y3, Y3
#define Q82COLS Q8COL(0, Y0); Q8COL(1, Y1)
#define Q83COLS Q82COLS; Q8COL(2, Y2)
#define Q84COLS Q83COLS; Q8COL(3, Y3)
#define Q82IDLE VXORPS Y2, Y2, Y2; VXORPS Y3, Y3, Y3
#define Q83IDLE VXORPS Y3, Y3, Y3
#define Q84IDLE

// Q8XBODY is the whole Q8 kernel for the column count whose macros
// COLINS, IDLE, TABS, ZERO, COLS, YADDS and SCAT are (Q8n…, YADDSn,
// YSCATn); the other arguments are its labels, unique per expansion.
// Each row: its scales, the columns' tables, one pass over its groups with
// each weight vector loaded and its magnitude taken once for all the
// columns, the row sums reduced (SUM4, the single-column kernel's order)
// into the frame; FLUSHROWS adds them into the outputs at the end.
#define Q8XBODY(COLINS, IDLE, TABS, ZERO, COLS, YADDS, SCAT, row, dwp, dwe, dwd, grp, fl4, fl1, done) \
	MOVQ         sc+0(FP), SI;      \
	MOVQ         data+8(FP), DI;    \
	MOVQ         rows+16(FP), CX;   \
	MOVQ         groups+24(FP), R8; \
	MOVQ         cols+32(FP), BX;   \
	COLINS;                         \
	MOVL         $0x00010001, AX;   \
	VMOVD        AX, X14;           \
	VPBROADCASTD X14, Y14;          \
	VXORPS       Y0, Y0, Y0;        \
	VMOVUPS      Y0, 160(SP);       \
	IDLE;                           \
	XORQ         R9, R9;            \
row: \
	PREFETCHT0 (X4PFD)(DI);         \
	PREFETCHT0 (X4PFD+64)(DI);      \
	PREFETCHT0 (X4PFD+128)(DI);     \
	PREFETCHT0 (X4PFD+192)(DI);     \
	PREFETCHT0 (X4PFD/16)(SI);      \
	ROWDW(dwp, dwe, dwd);           \
	TABS;                           \
	ZERO;                           \
	XORQ    R11, R11;               \
	XORQ    AX, AX;                 \
	MOVQ    R8, DX;                 \
grp: \
	VMOVDQU (DI), Y4;               \
	VPABSB  Y4, Y5;                 \
	COLS;                           \
	ADDQ    $32, DI;                \
	ADDQ    $32, R11;               \
	ADDQ    $4, AX;                 \
	DECQ    DX;                     \
	JNZ     grp;                    \
	SUM4;                           \
	VMOVUPS X8, Q8ROWS(SP)(R9*4);   \
	LEAQ (SI)(R8*2), SI;            \
	ADDQ $4, R9;                    \
	DECQ CX;                        \
	JNZ  row;                       \
	FLUSHROWS(Q8ROWS, YADDS, SCAT, fl4, fl1, done)

// func q8avx2i8x4(sc, data *byte, rows, groups int, cols *[4]vnniCol)
//
// cols[c].xl is column c's x8 (natural order) here; xh and c4 are unused.
TEXT ·q8avx2i8x4(SB), $3392-40
	Q8XBODY(Q84COLINS, Q84IDLE, Q84TABS, Q84ZERO, Q84COLS, YADDS4, YSCAT4, q8x4row, q8x4dwp, q8x4dwe, q8x4dwd, q8x4grp, q8x4flush4, q8x4flush1, q8x4done)

q8x4done:
	VZEROUPPER
	RET

// q8avx2i8x2 and q8avx2i8x3 are q8avx2i8x4 for two and three columns (a
// server tick with two or three clients decoding, a prompt's last B mod 4
// columns), as q4avx2i8x2 and q4avx2i8x3 are for Q4: one pass over the
// tile with the four-column kernel's look-ahead, where a call per column
// (two columns) or a four-column pass with a repeated column (three) read
// it before. Same frame as q8avx2i8x4.
TEXT ·q8avx2i8x2(SB), $3392-40
	Q8XBODY(Q82COLINS, Q82IDLE, Q82TABS, Q82ZERO, Q82COLS, YADDS2, YSCAT2, q8x2row, q8x2dwp, q8x2dwe, q8x2dwd, q8x2grp, q8x2flush4, q8x2flush1, q8x2done)

q8x2done:
	VZEROUPPER
	RET

TEXT ·q8avx2i8x3(SB), $3392-40
	Q8XBODY(Q83COLINS, Q83IDLE, Q83TABS, Q83ZERO, Q83COLS, YADDS3, YSCAT3, q8x3row, q8x3dwp, q8x3dwe, q8x3dwd, q8x3grp, q8x3flush4, q8x3flush1, q8x3done)

q8x3done:
	VZEROUPPER
	RET

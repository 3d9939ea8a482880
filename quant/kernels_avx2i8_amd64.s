//go:build !noasm

#include "textflag.h"
#include "q4rows_amd64.h"

// AVX2 kernels with int8 activations (the avx2i8 path) for CPUs with AVX2
// but no VNNI (AMD Zen 2/3, Intel Haswell–Comet Lake). VPMADDUBSW (unsigned
// × signed bytes, pairs summed to int16) followed by VPMADDWD against int16
// ones sums four byte products into each dword, the lane layout VPDPBUSD
// gives, so the Vec's int8 views and the Q4 bias lanes (c4) serve both.
// Q8 weights are signed: their magnitude goes unsigned and their sign onto
// the activation (VPABSB, VPSIGNB), which keeps every int16 pair sum below
// 2·128·127 and away from VPMADDUBSW's saturation. Four rows run at a time
// so each activation block is loaded once for them. Q8 reduces the four
// rows' float sums together (VHADDPS) into one 4-float update of y; Q4
// reduces them in the integers, with the rows as lanes (q4rows_amd64.h,
// shared with the four-column kernel).
// See docs/PERFORMANCE.md ("Kernels", "Decode stream", "Batched kernels").

// RED4 adds the horizontal sums of Y0..Y3 (rows 0..3) into y[0:4] at R9.
#define RED4 \
	VHADDPS      Y1, Y0, Y0; \
	VHADDPS      Y3, Y2, Y2; \
	VHADDPS      Y2, Y0, Y0; \
	VEXTRACTF128 $1, Y0, X1; \
	VADDPS       X1, X0, X0; \
	VADDPS       (R9), X0, X0; \
	VMOVUPS      X0, (R9)

// ROWSCALES(rowsz, ...) writes, for rowsz bytes of frame (32 per row),
// each row's f16 scales times the activation scales (Y12; R15 points at
// them) as 8 floats at r·32(SP), rows' scales starting at SI (2·R8 bytes
// apart). Full rows (8 groups) convert with one VCVTPH2PS each; otherwise
// one scale at a time, so nothing past the scale array is read, and lanes
// ≥ groups keep the zeros stored at entry. Clobbers AX, BX, DX, R12, Y4.
#define ROWSCALES(rowsz, full, part, prow, pel, done) \
	CMPQ R8, $8; \
	JNE  part; \
	XORQ DX, DX; \
full: \
	VCVTPH2PS (SI)(DX*1), Y4; \
	VMULPS    Y12, Y4, Y4; \
	VMOVUPS   Y4, (SP)(DX*2); \
	ADDQ      $16, DX; \
	CMPQ      DX, $(rowsz/2); \
	JLT       full; \
	JMP       done; \
part: \
	MOVQ SI, R12; \
	XORQ DX, DX; \
prow: \
	XORQ BX, BX; \
pel: \
	MOVWLZX   (R12), AX; \
	VMOVD     AX, X4; \
	VCVTPH2PS X4, X4; \
	VMULSS    (R15)(BX*4), X4, X4; \
	LEAQ      (SP)(DX*1), AX; \
	VMOVSS    X4, (AX)(BX*4); \
	ADDQ      $2, R12; \
	INCQ      BX; \
	CMPQ      BX, R8; \
	JLT       pel; \
	ADDQ      $32, DX; \
	CMPQ      DX, $rowsz; \
	JLT       prow; \
done:

// PFD is how far ahead of the 4-row block the full-row Q4 loop (and the
// Q8 4-row loop) prefetches its data stream into L1 (the scale stream
// PFD/8 ahead for Q4, PFD/16 for Q8: the same distance in tiles): DRAM
// lines stay in flight while a block computes.
// On the loaded Zen 3 VM, a 256 MiB Q4 matvec went from 90% of a plain
// read loop's rate without it to 108% at 4 KiB (median of 5; noisy).
// The Q4 loop prefetches with PREFETCHNTA: its weights are read once per
// token, and the non-temporal hint keeps them from displacing the
// activations, KV cache and norms that the token's serial work reads
// next; the stream itself runs at the same rate as with PREFETCHT0, and
// a decode token's 2-thread pass took 0.94x the time (docs/PERFORMANCE.md,
// "Session 6: the stream"). The four-column kernel keeps PREFETCHT0: its
// 4-token pass was no faster with NTA.
#define PFD 4096

// sc16mask: the 16 bytes at sc16mask+16−2G keep a short row's G f16
// scales and zero the rest (the next row's).
DATA sc16mask<>+0(SB)/8, $-1
DATA sc16mask<>+8(SB)/8, $-1
DATA sc16mask<>+16(SB)/8, $0
DATA sc16mask<>+24(SB)/8, $0
GLOBL sc16mask<>(SB), RODATA|NOPTR, $32

// HSUMPAIRED leaves Y0's horizontal sum in X0 with RED4's pairing,
// (l0+l1)+(l2+l3) + (l4+l5)+(l6+l7). Clobbers X1.
#define HSUMPAIRED \
	VHADDPS      Y0, Y0, Y0; \
	VHADDPS      Y0, Y0, Y0; \
	VEXTRACTF128 $1, Y0, X1; \
	VADDPS       X1, X0, X0

// func q4avx2i8(sc, data *byte, rows, groups int, xl, xh *int8, c4 *int32, dx, y *float32)
//
// Four rows at a time with the rows as lanes (q4rows_amd64.h): the group
// sums are exact integers, bias included, so tiles with pad nibbles need
// nothing special. Full rows (8 groups) take the unrolled, prefetching
// loop; short rows and the last rows mod 4 the general one, which runs the
// last rows one at a time as a block whose four rows are the same row
// (stride 0), keeping lane 0.
//
// Frame, from SP+k: the column block (Q4COLPREP) at 0, the block's tables
// at 1280, 64 bytes of scale slots (16 per row, zero past the row's
// groups) at 1408. As in q4avx2i8x4 (batch_avx2i8_amd64.s), the kernel is
// four copies of one body (S1BODY), one per displacement k ∈ {0, 8, 16,
// 24}, picked at entry so that SP+k is 32-byte aligned and no 32-byte
// frame load crosses a cache line.
#define S1COL(k) (k)
#define S1T(k) ((k)+1280)
#define S1SLOT(k) ((k)+1408)

// S1PAIR runs group pair p of the block (w0..w3 as in Q4BUILD) into Y0.
#define S1PAIR(k, p, w0, w1, w2, w3, ACC) \
	Q4BUILD(p, w0, w1, w2, w3); \
	Q4SUM(S1COL(k), p);         \
	ACC(S1T(k)+32*(p), Y0)

// S1BLOCK runs one full block (four 8-group rows) of the full-row loop:
// its prefetches PFD ahead, the scales and tables, the four group pairs,
// and the rows' sums added into y at R9.
#define S1BLOCK(k) \
	Q4PF8(PREFETCHNTA, PFD);                \
	Q4SCALES((SI), 16(SI), 32(SI), 48(SI)); \
	Q4TAB(S1COL(k), S1T(k));                \
	Q4FULLPAIRS(S1PAIR, k);                 \
	Q4HALVES(Y0, X0);                       \
	VADDPS       (R9), X0, X0;              \
	VMOVUPS      X0, (R9)

// S1EDGE prefetches the PFD bytes of data from `from` on (see the note
// above TEXT ·q4avx2i8), with cur and cnt as scratch.
#define S1EDGE(from, cur, cnt, edge) \
	MOVQ         from, cur;      \
	MOVQ         $(PFD/64), cnt; \
edge: \
	PREFETCHNTA  (cur);          \
	ADDQ         $64, cur;       \
	DECQ         cnt;            \
	JNZ          edge

// S1BODY is the whole kernel for frame displacement k once the
// arguments are loaded, from the column prep to the jump to done; the
// other arguments are its labels, unique per expansion.
#define S1BODY(k, done, edge, full, gen, gtab, gh0, gh1, gh2, gh3, gend, gend1, g1, g4slow, g4r, g4e, g1r, g1e) \
	Q4COLPREP(S1COL(k), AX, BX, DX, R14);  \
	Q4ENTRY(S1SLOT(k), sc16mask<>, gen);   \
	S1EDGE(DI, AX, BX, edge);              \
full: \
	S1BLOCK(k);                            \
	Q4NEXTFULL(full); \
gen: \
	TESTQ        CX, CX;                   \
	JZ           done;                     \
	Q4SCROWS(S1SLOT(k), g1, g4slow, g4r, g4e, g1r, g1e, gtab); \
gtab: \
	Q4TAB(S1COL(k), S1T(k));               \
	Q4GENPAIRS(S1PAIR, k, gh0, gh1, gh2, gh3, gend); \
gend: \
	Q4HALVES(Y0, X0);                      \
	CMPQ         CX, $4;                   \
	JLT          gend1;                    \
	VADDPS       (R9), X0, X0;             \
	VMOVUPS      X0, (R9);                 \
	Q4NEXTGEN(gen); \
gend1: \
	VADDSS       (R9), X0, X0;             \
	VMOVSS       X0, (R9);                 \
	ADDQ         R12, DI;                  \
	ADDQ         R13, SI;                  \
	ADDQ         $4, R9;                   \
	DECQ         CX;                       \
	JMP          gen

// func q4avx2i8pair(sc, data, scB, dataB *byte, rows int, xl, xh *int8, c4 *int32, dx, y, yB *float32)
//
// q4avx2i8's full-row loop over two tiles at once: tile A (sc, data, y)
// and tile B (scB, dataB, yB), both of `rows` full rows (8 groups, rows a
// multiple of 4, as DotPair's wrapper checks) over the same columns, so one
// column preparation serves both. Blocks of four rows are taken from A and
// B in turn, each stream prefetching PFD ahead of its own block: two DRAM
// streams far apart in the file keep more of one core's misses in flight
// than one stream does (docs/PERFORMANCE.md, "Session 9: two tile streams
// per thread"). Each block is the same instruction sequence as
// q4avx2i8's, so every row gets the bits Dot gives it. Between blocks the
// streams' cursors swap: A's DI, SI, R9 with B's in AX, BX, DX.
// Its macros come before any TEXT because go vet reads a macro's FP
// references as belonging to the function above it.
#define S2BLOCK(k) \
	S1BLOCK(k);                             \
	ADDQ         $512, DI;                  \
	ADDQ         $64, SI;                   \
	ADDQ         $16, R9;                   \
	XCHGQ        DI, AX;                    \
	XCHGQ        SI, BX;                    \
	XCHGQ        R9, DX

// S2BODY is q4avx2i8pair for frame displacement k once A's arguments are
// loaded. Q4ENTRY's general-loop exit is never taken (the wrapper sends
// only full rows here), so it goes straight to done.
#define S2BODY(k, done, edgea, edgeb, full) \
	Q4COLPREP(S1COL(k), AX, BX, DX, R14); \
	Q4ENTRY(S1SLOT(k), sc16mask<>, done); \
	MOVQ         dataB+24(FP), AX;        \
	MOVQ         scB+16(FP), BX;          \
	MOVQ         yB+80(FP), DX;           \
	S1EDGE(DI, R14, R13, edgea);          \
	S1EDGE(AX, R14, R13, edgeb);          \
full: \
	S2BLOCK(k);                           \
	S2BLOCK(k);                           \
	SUBQ         $4, CX;                  \
	CMPQ         CX, $4;                  \
	JGE          full;                    \
	JMP          done

// The frame is the 1472 bytes above plus 24 for the largest k. The edge
// loop in S1BODY: the full-row loop prefetches PFD ahead of its block, so
// a tile's first PFD bytes of data are its predecessor's to fetch. When
// the predecessor ran just before (a stripe's tiles are contiguous), its
// last blocks covered only the first PFD − (header + scales) bytes: the
// next 2 KiB were left to the hardware prefetcher, 11% of every 18 KiB
// tile; and a stripe taken after another thread's (or a matvec's first)
// starts cold. So the first PFD bytes are prefetched at entry; lines
// already on their way cost one instruction each.
TEXT ·q4avx2i8(SB), $1496-72
	MOVQ         sc+0(FP), SI
	MOVQ         data+8(FP), DI
	MOVQ         rows+16(FP), CX
	MOVQ         groups+24(FP), R8
	MOVQ         xl+32(FP), AX
	MOVQ         xh+40(FP), BX
	MOVQ         c4+48(FP), DX
	MOVQ         dx+56(FP), R14
	MOVQ         y+64(FP), R9
	Q4ALIGNJUMP(R10, q4i8k8, q4i8k16, q4i8k24)
	S1BODY(0, q4i8done, q4i8edge0, q4i8full0, q4i8gen0, q4i8gtab0, q4i8gh00, q4i8gh10, q4i8gh20, q4i8gh30, q4i8gend0, q4i8gendone0, q4i8g10, q4i8g4slow0, q4i8g4r0, q4i8g4e0, q4i8g1r0, q4i8g1e0)

q4i8k8:
	S1BODY(8, q4i8done, q4i8edge8, q4i8full8, q4i8gen8, q4i8gtab8, q4i8gh08, q4i8gh18, q4i8gh28, q4i8gh38, q4i8gend8, q4i8gendone8, q4i8g18, q4i8g4slow8, q4i8g4r8, q4i8g4e8, q4i8g1r8, q4i8g1e8)

q4i8k16:
	S1BODY(16, q4i8done, q4i8edge16, q4i8full16, q4i8gen16, q4i8gtab16, q4i8gh016, q4i8gh116, q4i8gh216, q4i8gh316, q4i8gend16, q4i8gendone16, q4i8g116, q4i8g4slow16, q4i8g4r16, q4i8g4e16, q4i8g1r16, q4i8g1e16)

q4i8k24:
	S1BODY(24, q4i8done, q4i8edge24, q4i8full24, q4i8gen24, q4i8gtab24, q4i8gh024, q4i8gh124, q4i8gh224, q4i8gh324, q4i8gend24, q4i8gendone24, q4i8g124, q4i8g4slow24, q4i8g4r24, q4i8g4e24, q4i8g1r24, q4i8g1e24)

q4i8done:
	VZEROUPPER
	RET

TEXT ·q4avx2i8pair(SB), $1496-88
	MOVQ         sc+0(FP), SI
	MOVQ         data+8(FP), DI
	MOVQ         rows+32(FP), CX
	MOVQ         $8, R8
	MOVQ         xl+40(FP), AX
	MOVQ         xh+48(FP), BX
	MOVQ         c4+56(FP), DX
	MOVQ         dx+64(FP), R14
	MOVQ         y+72(FP), R9
	Q4ALIGNJUMP(R10, q4pk8, q4pk16, q4pk24)
	S2BODY(0, q4pdone, q4pedgea0, q4pedgeb0, q4pfull0)

q4pk8:
	S2BODY(8, q4pdone, q4pedgea8, q4pedgeb8, q4pfull8)

q4pk16:
	S2BODY(16, q4pdone, q4pedgea16, q4pedgeb16, q4pfull16)

q4pk24:
	S2BODY(24, q4pdone, q4pedgea24, q4pedgeb24, q4pfull24)

q4pdone:
	VZEROUPPER
	RET

// Q8ROW adds one row's group (32 int8 weights at mem) against the
// activation group in Y9 into acc, scaled by the row's scale at sc.
#define Q8ROW(mem, sc, acc) \
	VMOVDQU      mem, Y4;     \
	VPSIGNB      Y4, Y9, Y5;  \
	VPABSB       Y4, Y4;      \
	VPMADDUBSW   Y5, Y4, Y4;  \
	VPMADDWD     Y14, Y4, Y4; \
	VCVTDQ2PS    Y4, Y4;      \
	VBROADCASTSS sc, Y5;      \
	VFMADD231PS  Y5, Y4, acc

// func q8avx2i8(sc, data *byte, rows, groups int, x8 *int8, dx, y *float32)
//
// Frame: four rows' scale tables.
TEXT ·q8avx2i8(SB), NOSPLIT, $160-56
	MOVQ         sc+0(FP), SI
	MOVQ         data+8(FP), DI
	MOVQ         rows+16(FP), CX
	MOVQ         groups+24(FP), R8
	MOVQ         dx+40(FP), R15
	VMOVUPS      (R15), Y12
	MOVQ         y+48(FP), R9
	MOVL         $0x00010001, AX
	VMOVD        AX, X14
	VPBROADCASTD X14, Y14
	MOVQ         R8, R10
	SHLQ         $5, R10           // a row's weight bytes
	LEAQ         (R10)(R10*2), R11 // three rows'
	LEAQ         PFD(DI), R14      // prefetch cursor, 128 bytes per group step
	CMPQ         CX, $4
	JLT          q8i8one

q8i8four:
	PREFETCHT0 (PFD/16)(SI)
	ROWSCALES(128, q8i8sc4, q8i8sc4p, q8i8sc4r, q8i8sc4e, q8i8sc4d)
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	MOVQ   x8+32(FP), R12
	MOVQ   SP, AX
	MOVQ   R8, BX

q8i8fourg:
	PREFETCHT0 (R14)
	PREFETCHT0 64(R14)
	ADDQ    $128, R14
	VMOVDQU (R12), Y9
	Q8ROW((DI), (AX), Y0)
	Q8ROW((DI)(R10*1), 32(AX), Y1)
	Q8ROW((DI)(R10*2), 64(AX), Y2)
	Q8ROW((DI)(R11*1), 96(AX), Y3)
	ADDQ    $32, DI
	ADDQ    $32, R12
	ADDQ    $4, AX
	DECQ    BX
	JNZ     q8i8fourg

	RED4
	ADDQ R11, DI
	LEAQ (SI)(R8*8), SI
	ADDQ $16, R9
	SUBQ $4, CX
	CMPQ CX, $4
	JGE  q8i8four

q8i8one:
	TESTQ CX, CX
	JZ    q8i8done
	ROWSCALES(32, q8i8sc1, q8i8sc1p, q8i8sc1r, q8i8sc1e, q8i8sc1d)
	VXORPS Y0, Y0, Y0
	MOVQ   x8+32(FP), R12
	MOVQ   SP, AX
	MOVQ   R8, BX

q8i8oneg:
	VMOVDQU (R12), Y9
	Q8ROW((DI), (AX), Y0)
	ADDQ    $32, DI
	ADDQ    $32, R12
	ADDQ    $4, AX
	DECQ    BX
	JNZ     q8i8oneg

	HSUMPAIRED
	VADDSS (R9), X0, X0
	VMOVSS X0, (R9)
	LEAQ   (SI)(R8*2), SI
	ADDQ   $4, R9
	DECQ   CX
	JNZ    q8i8one

q8i8done:
	VZEROUPPER
	RET

// qorder: VPERMD indices that undo the lane interleaving of VPACKSSDW and
// VPACKSSWB on four vectors of 8 int32.
DATA qorder<>+0(SB)/4, $0
DATA qorder<>+4(SB)/4, $4
DATA qorder<>+8(SB)/4, $1
DATA qorder<>+12(SB)/4, $5
DATA qorder<>+16(SB)/4, $2
DATA qorder<>+20(SB)/4, $6
DATA qorder<>+24(SB)/4, $3
DATA qorder<>+28(SB)/4, $7
GLOBL qorder<>(SB), RODATA|NOPTR, $32

// func quantize256(x *float32, groups int, q8, xl, xh *int8, dx *float32, c4, c8 *int32)
//
// Vec.quantizeGo's arithmetic, one group (32 values) per step: max|x|
// through the bit patterns, d = max/127, q = round-to-even(x/d)
// (VCVTPS2DQ under the default rounding mode) clamped to ±127 (the packs
// saturate, VPMAXSB lifts −128), and the c4/c8 bias lanes from
// VPMADDUBSW/VPMADDWD against ones (each dword sums four q).
TEXT ·quantize256(SB), NOSPLIT, $0-64
	MOVQ         x+0(FP), SI
	MOVQ         groups+8(FP), CX
	MOVQ         q8+16(FP), DI
	MOVQ         xl+24(FP), R8
	MOVQ         xh+32(FP), R9
	MOVQ         dx+40(FP), R10
	MOVQ         c4+48(FP), R11
	MOVQ         c8+56(FP), R12
	MOVL         $0x7fffffff, AX
	VMOVD        AX, X15
	VPBROADCASTD X15, Y15        // |·| mask
	MOVL         $0x01010101, AX
	VMOVD        AX, X14
	VPBROADCASTD X14, Y14        // unsigned byte ones
	MOVL         $0x00010001, AX
	VMOVD        AX, X13
	VPBROADCASTD X13, Y13        // int16 ones
	MOVL         $0x81818181, AX
	VMOVD        AX, X12
	VPBROADCASTD X12, Y12        // int8 −127
	VMOVDQU      qorder<>(SB), Y11
	MOVL         $127, AX
	VCVTSI2SSL   AX, X10, X10    // 127.0
	TESTQ        CX, CX
	JZ           q256done

q256loop:
	VMOVUPS     (SI), Y0
	VMOVUPS     32(SI), Y1
	VMOVUPS     64(SI), Y2
	VMOVUPS     96(SI), Y3
	VPAND       Y15, Y0, Y4
	VPAND       Y15, Y1, Y5
	VPAND       Y15, Y2, Y6
	VPAND       Y15, Y3, Y7
	VPMAXUD     Y5, Y4, Y4
	VPMAXUD     Y7, Y6, Y6
	VPMAXUD     Y6, Y4, Y4
	VEXTRACTI128 $1, Y4, X5
	VPMAXUD     X5, X4, X4
	VPSHUFD     $0x4e, X4, X5
	VPMAXUD     X5, X4, X4
	VPSHUFD     $0xb1, X4, X5
	VPMAXUD     X5, X4, X4       // X4 = max|x| (as bits)
	VDIVSS      X10, X4, X4      // d = max/127
	VMOVSS      X4, (R10)
	VXORPS      X5, X5, X5
	VUCOMISS    X5, X4
	JEQ         q256zero
	VBROADCASTSS X4, Y4
	VDIVPS      Y4, Y0, Y0
	VDIVPS      Y4, Y1, Y1
	VDIVPS      Y4, Y2, Y2
	VDIVPS      Y4, Y3, Y3
	VCVTPS2DQ   Y0, Y0
	VCVTPS2DQ   Y1, Y1
	VCVTPS2DQ   Y2, Y2
	VCVTPS2DQ   Y3, Y3
	VPACKSSDW   Y1, Y0, Y0
	VPACKSSDW   Y3, Y2, Y2
	VPACKSSWB   Y2, Y0, Y0
	VPERMD      Y0, Y11, Y0
	VPMAXSB     Y12, Y0, Y0
	JMP         q256store

q256zero:
	VPXOR Y0, Y0, Y0

q256store:
	VMOVDQU      Y0, (DI)
	VMOVDQU      X0, (R8)
	VEXTRACTI128 $1, Y0, X1
	VMOVDQU      X1, (R9)
	VPMADDUBSW   Y0, Y14, Y2
	VPMADDWD     Y13, Y2, Y2     // Y2[l] = Σ q[4l..4l+3]
	VPXOR        Y5, Y5, Y5
	VPSLLD       $7, Y2, Y3
	VPSUBD       Y3, Y5, Y3      // −128·Σ
	VMOVDQU      Y3, (R12)
	VEXTRACTI128 $1, Y2, X3
	VPADDD       X3, X2, X2      // Σ over lane l of both halves
	VPSLLD       $3, X2, X2
	VPSUBD       X2, X5, X2      // −8·Σ
	VMOVDQU      X2, (R11)
	SUBQ         $-128, SI
	ADDQ         $32, DI
	ADDQ         $16, R8
	ADDQ         $16, R9
	ADDQ         $4, R10
	ADDQ         $16, R11
	ADDQ         $32, R12
	DECQ         CX
	JNZ          q256loop

q256done:
	VZEROUPPER
	RET

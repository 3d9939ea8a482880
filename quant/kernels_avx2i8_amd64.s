//go:build !noasm

#include "textflag.h"
#include "hsum_amd64.h"

// AVX2 kernels with int8 activations (the avx2i8 path) for CPUs with AVX2
// but no VNNI (AMD Zen 2/3, Intel Haswell–Comet Lake). VPMADDUBSW (unsigned
// × signed bytes, pairs summed to int16) followed by VPMADDWD against int16
// ones sums four byte products into each dword, the lane layout VPDPBUSD
// gives, so the Vec's int8 views and the Q4 bias lanes (c4) serve both.
// Q8 weights are signed: their magnitude goes unsigned and their sign onto
// the activation (VPABSB, VPSIGNB), which keeps every int16 pair sum below
// 2·128·127 and away from VPMADDUBSW's saturation. Four rows run at a time
// so each activation block is loaded once for them, and their sums are
// reduced together (VHADDPS) into one 4-float update of y.
// See docs/PERFORMANCE.md ("Kernels", "Decode stream").

// RED4 adds the horizontal sums of Y0..Y3 (rows 0..3) into y[0:4] at R9.
#define RED4 \
	VHADDPS      Y1, Y0, Y0; \
	VHADDPS      Y3, Y2, Y2; \
	VHADDPS      Y2, Y0, Y0; \
	VEXTRACTF128 $1, Y0, X1; \
	VADDPS       X1, X0, X0; \
	VADDPS       (R9), X0, X0; \
	VMOVUPS      X0, (R9)

// i8lanes: VPERMPS indices giving a row's two scales of a group pair four
// lanes each (lanes 0–3 group 2p, 4–7 group 2p+1).
DATA i8lanes<>+0(SB)/4, $0
DATA i8lanes<>+4(SB)/4, $0
DATA i8lanes<>+8(SB)/4, $0
DATA i8lanes<>+12(SB)/4, $0
DATA i8lanes<>+16(SB)/4, $1
DATA i8lanes<>+20(SB)/4, $1
DATA i8lanes<>+24(SB)/4, $1
DATA i8lanes<>+28(SB)/4, $1
GLOBL i8lanes<>(SB), RODATA|NOPTR, $32

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

// Q4ROW adds one row's group pair (nibbles at mem, loaded into w: Y4, or
// X4 for a lone last group) against the activation pair in Y9 (xl), Y10
// (xh), Y11 (c4 bias) into acc, scaled by the row's table at sc.
#define Q4ROW(mem, w, sc, acc) \
	VMOVDQU     mem, w;      \
	VPSRLW      $4, Y4, Y5;  \
	VPAND       Y15, Y4, Y4; \
	VPAND       Y15, Y5, Y5; \
	VPMADDUBSW  Y9, Y4, Y4;  \
	VPMADDUBSW  Y10, Y5, Y5; \
	VPADDW      Y5, Y4, Y4;  \
	VPMADDWD    Y14, Y4, Y4; \
	VPADDD      Y11, Y4, Y4; \
	VCVTDQ2PS   Y4, Y4;      \
	VPERMPS     sc, Y13, Y5; \
	VFMADD231PS Y5, Y4, acc

// f16perm: VPSHUFB control that reorders a row's eight f16 scales to
// groups 0 2 4 6 1 3 5 7, so after VCVTPH2PS the low 128-bit lane holds
// the even groups and the high lane the odd ones; f32perm does the same
// for eight floats (VPERMPS). Then VPERMILPS $(0x55·p), an in-lane
// shuffle, spreads group 2p over lanes 0–3 and group 2p+1 over lanes 4–7:
// on Zen 3 that costs a third of a lane-crossing VPERMPS per group pair.
DATA f16perm<>+0(SB)/8, $0x0d0c090805040100
DATA f16perm<>+8(SB)/8, $0x0f0e0b0a07060302
GLOBL f16perm<>(SB), RODATA|NOPTR, $16
DATA f32perm<>+0(SB)/4, $0
DATA f32perm<>+4(SB)/4, $2
DATA f32perm<>+8(SB)/4, $4
DATA f32perm<>+12(SB)/4, $6
DATA f32perm<>+16(SB)/4, $1
DATA f32perm<>+20(SB)/4, $3
DATA f32perm<>+24(SB)/4, $5
DATA f32perm<>+28(SB)/4, $7
GLOBL f32perm<>(SB), RODATA|NOPTR, $32

// ROWT puts row r's scales (full row, at 16·r(SI)) times the activation
// scales (Y13, in the same even/odd order) into t.
// PFD is how far ahead of the 4-row block the full-row Q4 loop (and the
// Q8 4-row loop) prefetches its data stream into L1 (the scale stream
// PFD/8 ahead for Q4, PFD/16 for Q8: the same distance in tiles): DRAM lines stay in flight while a block computes.
// On the loaded Zen 3 VM, a 256 MiB Q4 matvec went from 90% of a plain
// read loop's rate without it to 108% at 4 KiB (median of 5; noisy).
#define PFD 4096

#define ROWT(r, t, x) \
	VMOVDQU   (16*(r))(SI), x;      \
	VPSHUFB   f16perm<>(SB), x, x;  \
	VCVTPH2PS x, t;                 \
	VMULPS    Y13, t, t

// sc16mask: the 16 bytes at sc16mask+16−2G keep a short row's G f16
// scales and zero the rest (the next row's).
DATA sc16mask<>+0(SB)/8, $-1
DATA sc16mask<>+8(SB)/8, $-1
DATA sc16mask<>+16(SB)/8, $0
DATA sc16mask<>+24(SB)/8, $0
GLOBL sc16mask<>(SB), RODATA|NOPTR, $32

// ROWTS puts a short row's scales (16 bytes at mem, masked by X13) times
// the activation scales (at R15) into t, in even/odd group order.
#define ROWTS(mem, t) \
	VMOVDQU   mem, X4;             \
	VPAND     X13, X4, X4;         \
	VCVTPH2PS X4, Y4;              \
	VMULPS    (R15), Y4, Y4;       \
	VMOVDQU   f32perm<>(SB), Y5;   \
	VPERMPS   Y4, Y5, t

// Q4ROWT is Q4ROW for a full row: the scales from the even/odd table t,
// and no bias (the row adds it once: t · Y11, see q4i8full).
#define Q4ROWT(mem, w, t, imm, acc) \
	VMOVDQU     mem, w;      \
	VPSRLW      $4, Y4, Y5;  \
	VPAND       Y15, Y4, Y4; \
	VPAND       Y15, Y5, Y5; \
	VPMADDUBSW  Y9, Y4, Y4;  \
	VPMADDUBSW  Y10, Y5, Y5; \
	VPADDW      Y5, Y4, Y4;  \
	VPMADDWD    Y14, Y4, Y4; \
	VCVTDQ2PS   Y4, Y4;      \
	VPERMILPS   $(imm), t, Y5; \
	VFMADD231PS Y5, Y4, acc

// Q4PAIR4 runs group pair p of four rows (R10 bytes apart, R11 = 3·R10)
// against the activation pair at p·32 of R12 and R13; w is Y4, or X4 for
// a lone last group (its table lanes are zero past the row's groups).
#define Q4PAIR4(p, w) \
	VMOVDQU (32*(p))(R12), Y9;  \
	VMOVDQU (32*(p))(R13), Y10; \
	Q4ROWT((32*(p))(DI), w, Y6, 0x55*(p), Y0);        \
	Q4ROWT((32*(p))(DI)(R10*1), w, Y7, 0x55*(p), Y1); \
	Q4ROWT((32*(p))(DI)(R10*2), w, Y8, 0x55*(p), Y2); \
	Q4ROWT((32*(p))(DI)(R11*1), w, Y12, 0x55*(p), Y3)

// Q4PAIR1 is Q4PAIR4 for one row (table Y6, accumulator Y0).
#define Q4PAIR1(p, w) \
	VMOVDQU (32*(p))(R12), Y9;  \
	VMOVDQU (32*(p))(R13), Y10; \
	Q4ROWT((32*(p))(DI), w, Y6, 0x55*(p), Y0)

// HSUMPAIRED leaves Y0's horizontal sum in X0 with RED4's pairing,
// (l0+l1)+(l2+l3) + (l4+l5)+(l6+l7). Clobbers X1.
#define HSUMPAIRED \
	VHADDPS      Y0, Y0, Y0; \
	VHADDPS      Y0, Y0, Y0; \
	VEXTRACTF128 $1, Y0, X1; \
	VADDPS       X1, X0, X0

// func q4avx2i8(sc, data *byte, rows, groups int, xl, xh *int8, c4 *int32, dx, y *float32, fold int)
//
// fold ≠ 0 lets rows take the loops that apply the bias once per row in
// float (q4i8full, q4i8short); the caller passes 0 when the tile's
// last group has pad nibbles, whose 8·x against live activations past the
// tile would then cancel in float instead of in the integers.
//
// Frame: four rows' scale tables (32 bytes each) and 32 bytes of slack
// for the last row's shifted VPERMPS loads.
TEXT ·q4avx2i8(SB), NOSPLIT, $160-80
	MOVQ         sc+0(FP), SI
	MOVQ         data+8(FP), DI
	MOVQ         rows+16(FP), CX
	MOVQ         groups+24(FP), R8
	MOVQ         dx+56(FP), R15
	VMOVUPS      (R15), Y12
	MOVQ         y+64(FP), R9
	MOVL         $0x0f0f0f0f, AX
	VMOVD        AX, X15
	VPBROADCASTD X15, Y15
	MOVL         $0x00010001, AX
	VMOVD        AX, X14
	VPBROADCASTD X14, Y14
	VMOVDQU      i8lanes<>(SB), Y13
	VXORPS       Y0, Y0, Y0
	VMOVUPS      Y0, (SP)
	VMOVUPS      Y0, 32(SP)
	VMOVUPS      Y0, 64(SP)
	VMOVUPS      Y0, 96(SP)
	VMOVUPS      Y0, 128(SP)
	MOVQ         R8, R10
	SHLQ         $4, R10           // a row's nibble bytes
	LEAQ         (R10)(R10*2), R11 // three rows'
	MOVQ         fold+72(FP), AX
	TESTQ        AX, AX
	JNZ          q4i8fold
	CMPQ         CX, $4
	JLT          q4i8one
	JMP          q4i8four

q4i8fold:

	// Full rows, four at a time: the tables live in Y6, Y7, Y8, Y12. The
	// Q4 bias enters once per row as table · (Σ of each group's c4 lanes,
	// as floats, even/odd order: three VPHADDD leave them so) in Y11,
	// instead of an integer add per group pair; the products stay exact
	// integers until the scale multiply either way.
	VMOVUPS      f32perm<>(SB), Y4
	VPERMPS      Y12, Y4, Y13      // activation scales, even/odd order
	MOVQ         xl+32(FP), R12
	MOVQ         xh+40(FP), R13
	MOVQ         c4+48(FP), DX
	VMOVDQU      (DX), Y11
	VPHADDD      32(DX), Y11, Y11
	VMOVDQU      64(DX), Y4
	VPHADDD      96(DX), Y4, Y4
	VPHADDD      Y4, Y11, Y11
	VCVTDQ2PS    Y11, Y11
	CMPQ         CX, $4
	JLT          q4i8fone
	CMPQ         R8, $8
	JNE          q4i8short

	// The loop prefetches PFD ahead of its block, so a tile's first PFD
	// bytes of data are its predecessor's to fetch. When the predecessor
	// ran just before (a stripe's tiles are contiguous), its last blocks
	// covered only the first PFD − (header + scales) bytes: the next 2 KiB
	// were left to the hardware prefetcher, 11% of every 18 KiB tile; and
	// a stripe taken after another thread's (or a matvec's first) starts
	// cold. So the first PFD bytes are prefetched here; lines already on
	// their way cost one instruction each.
	MOVQ         DI, AX
	MOVQ         $(PFD/64), BX

q4i8edge:
	PREFETCHT0   (AX)
	ADDQ         $64, AX
	DECQ         BX
	JNZ          q4i8edge

q4i8full:
	PREFETCHT0 (PFD+0)(DI)
	PREFETCHT0 (PFD+64)(DI)
	PREFETCHT0 (PFD+128)(DI)
	PREFETCHT0 (PFD+192)(DI)
	PREFETCHT0 (PFD+256)(DI)
	PREFETCHT0 (PFD+320)(DI)
	PREFETCHT0 (PFD+384)(DI)
	PREFETCHT0 (PFD+448)(DI)
	PREFETCHT0 (PFD/8)(SI)
	ROWT(0, Y6, X6)
	ROWT(1, Y7, X7)
	ROWT(2, Y8, X8)
	ROWT(3, Y12, X12)
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	Q4PAIR4(0, Y4)
	Q4PAIR4(1, Y4)
	Q4PAIR4(2, Y4)
	Q4PAIR4(3, Y4)
	VFMADD231PS Y11, Y6, Y0
	VFMADD231PS Y11, Y7, Y1
	VFMADD231PS Y11, Y8, Y2
	VFMADD231PS Y11, Y12, Y3
	RED4
	ADDQ $512, DI
	ADDQ $64, SI
	ADDQ $16, R9
	SUBQ $4, CX
	CMPQ CX, $4
	JGE  q4i8full
	JMP  q4i8fone

	// Short rows (fewer than 8 groups, no pad nibbles), four at a time:
	// the tables come from ROWSCALES' stack slots (lanes past the row's
	// groups zero) put in even/odd order by one VPERMPS each, and the
	// unrolled pairs stop after the row's last one.
	// While a 16-byte load from the block's last row cannot pass the
	// scale array's end (remaining rows · 2G ≥ 6G + 16), each row's
	// scales load at once, masked to its G lanes (X13); the last blocks
	// go one scale at a time (ROWSCALES).
q4i8short:
	LEAQ    sc16mask<>+16(SB), AX
	SUBQ    R8, AX
	SUBQ    R8, AX
	VMOVDQU (AX), X13
	LEAQ    (R8)(R8*2), R14
	SHLQ    $1, R14               // three rows' scale bytes

q4i8shrow:
	MOVQ    CX, AX
	IMULQ   R8, AX
	SHLQ    $1, AX
	LEAQ    16(R14), BX
	CMPQ    AX, BX
	JLT     q4i8shslow
	ROWTS((SI), Y6)
	ROWTS((SI)(R8*2), Y7)
	ROWTS((SI)(R8*4), Y8)
	ROWTS((SI)(R14*1), Y12)
	JMP     q4i8shpairs

q4i8shslow:
	ROWSCALES(128, q4i8ss, q4i8ssp, q4i8ssr, q4i8sse, q4i8ssd)
	MOVQ    xl+32(FP), R12
	VMOVDQU f32perm<>(SB), Y4
	VPERMPS (SP), Y4, Y6
	VPERMPS 32(SP), Y4, Y7
	VPERMPS 64(SP), Y4, Y8
	VPERMPS 96(SP), Y4, Y12

q4i8shpairs:
	VXORPS  Y0, Y0, Y0
	VXORPS  Y1, Y1, Y1
	VXORPS  Y2, Y2, Y2
	VXORPS  Y3, Y3, Y3
	CMPQ    R8, $2
	JLT     q4i8sh0
	Q4PAIR4(0, Y4)
	CMPQ    R8, $4
	JLT     q4i8sh1
	Q4PAIR4(1, Y4)
	CMPQ    R8, $6
	JLT     q4i8sh2
	Q4PAIR4(2, Y4)
	TESTQ   $1, R8
	JZ      q4i8shsum
	Q4PAIR4(3, X4)
	JMP     q4i8shsum

q4i8sh0:
	Q4PAIR4(0, X4)
	JMP     q4i8shsum

q4i8sh1:
	TESTQ   $1, R8
	JZ      q4i8shsum
	Q4PAIR4(1, X4)
	JMP     q4i8shsum

q4i8sh2:
	TESTQ   $1, R8
	JZ      q4i8shsum
	Q4PAIR4(2, X4)

q4i8shsum:
	VFMADD231PS Y11, Y6, Y0
	VFMADD231PS Y11, Y7, Y1
	VFMADD231PS Y11, Y8, Y2
	VFMADD231PS Y11, Y12, Y3
	RED4
	LEAQ (DI)(R10*4), DI
	LEAQ (SI)(R8*8), SI
	ADDQ $16, R9
	SUBQ $4, CX
	CMPQ CX, $4
	JGE  q4i8shrow

	// The last rows mod 4, one at a time, with the same arithmetic (and
	// the same pairing of lanes in the sum as RED4) as the loops above.
q4i8fone:
	TESTQ   CX, CX
	JZ      q4i8done
	VMOVUPS (R15), Y12
	ROWSCALES(32, q4i8fs, q4i8fsp, q4i8fsr, q4i8fse, q4i8fsd)
	MOVQ    xl+32(FP), R12
	VMOVDQU f32perm<>(SB), Y4
	VPERMPS (SP), Y4, Y6
	VXORPS  Y0, Y0, Y0
	CMPQ    R8, $2
	JLT     q4i8fo0
	Q4PAIR1(0, Y4)
	CMPQ    R8, $4
	JLT     q4i8fo1
	Q4PAIR1(1, Y4)
	CMPQ    R8, $6
	JLT     q4i8fo2
	Q4PAIR1(2, Y4)
	CMPQ    R8, $8
	JLT     q4i8fo3
	Q4PAIR1(3, Y4)
	JMP     q4i8fosum

q4i8fo0:
	Q4PAIR1(0, X4)
	JMP     q4i8fosum

q4i8fo1:
	TESTQ   $1, R8
	JZ      q4i8fosum
	Q4PAIR1(1, X4)
	JMP     q4i8fosum

q4i8fo2:
	TESTQ   $1, R8
	JZ      q4i8fosum
	Q4PAIR1(2, X4)
	JMP     q4i8fosum

q4i8fo3:
	TESTQ   $1, R8
	JZ      q4i8fosum
	Q4PAIR1(3, X4)

q4i8fosum:
	VFMADD231PS Y11, Y6, Y0
	HSUMPAIRED
	VADDSS  (R9), X0, X0
	VMOVSS  X0, (R9)
	ADDQ    R10, DI
	LEAQ    (SI)(R8*2), SI
	ADDQ    $4, R9
	DECQ    CX
	JMP     q4i8fone

q4i8four:
	ROWSCALES(128, q4i8sc4, q4i8sc4p, q4i8sc4r, q4i8sc4e, q4i8sc4d)
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	MOVQ   xl+32(FP), R12
	MOVQ   xh+40(FP), R13
	MOVQ   c4+48(FP), DX
	MOVQ   SP, AX
	MOVQ   R8, BX
	CMPQ   BX, $2
	JLT    q4i8four1

q4i8four2:
	VMOVDQU (R12), Y9
	VMOVDQU (R13), Y10
	VMOVDQU (DX), Y11
	Q4ROW((DI), Y4, (AX), Y0)
	Q4ROW((DI)(R10*1), Y4, 32(AX), Y1)
	Q4ROW((DI)(R10*2), Y4, 64(AX), Y2)
	Q4ROW((DI)(R11*1), Y4, 96(AX), Y3)
	ADDQ    $32, DI
	ADDQ    $32, R12
	ADDQ    $32, R13
	ADDQ    $32, DX
	ADDQ    $8, AX
	SUBQ    $2, BX
	CMPQ    BX, $2
	JGE     q4i8four2

q4i8four1:
	TESTQ   BX, BX
	JZ      q4i8fourend
	VMOVDQU (R12), Y9
	VMOVDQU (R13), Y10
	VMOVDQU (DX), Y11
	Q4ROW((DI), X4, (AX), Y0)
	Q4ROW((DI)(R10*1), X4, 32(AX), Y1)
	Q4ROW((DI)(R10*2), X4, 64(AX), Y2)
	Q4ROW((DI)(R11*1), X4, 96(AX), Y3)
	ADDQ    $16, DI

q4i8fourend:
	RED4
	ADDQ R11, DI              // DI was at row 1
	LEAQ (SI)(R8*8), SI       // four rows of 2·groups scale bytes
	ADDQ $16, R9
	SUBQ $4, CX
	CMPQ CX, $4
	JGE  q4i8four

q4i8one:
	TESTQ CX, CX
	JZ    q4i8done
	ROWSCALES(32, q4i8sc1, q4i8sc1p, q4i8sc1r, q4i8sc1e, q4i8sc1d)
	VXORPS Y0, Y0, Y0
	MOVQ   xl+32(FP), R12
	MOVQ   xh+40(FP), R13
	MOVQ   c4+48(FP), DX
	MOVQ   SP, AX
	MOVQ   R8, BX
	CMPQ   BX, $2
	JLT    q4i8one1

q4i8one2:
	VMOVDQU (R12), Y9
	VMOVDQU (R13), Y10
	VMOVDQU (DX), Y11
	Q4ROW((DI), Y4, (AX), Y0)
	ADDQ    $32, DI
	ADDQ    $32, R12
	ADDQ    $32, R13
	ADDQ    $32, DX
	ADDQ    $8, AX
	SUBQ    $2, BX
	CMPQ    BX, $2
	JGE     q4i8one2

q4i8one1:
	TESTQ   BX, BX
	JZ      q4i8oneend
	VMOVDQU (R12), Y9
	VMOVDQU (R13), Y10
	VMOVDQU (DX), Y11
	Q4ROW((DI), X4, (AX), Y0)
	ADDQ    $16, DI

q4i8oneend:
	HSUM8(Y0, X0, X1)
	VADDSS (R9), X0, X0
	VMOVSS X0, (R9)
	LEAQ   (SI)(R8*2), SI
	ADDQ   $4, R9
	DECQ   CX
	JNZ    q4i8one

q4i8done:
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

//go:build !noasm

#include "textflag.h"

// AVX2 + F16C group quantizers for the fast encoders (encode_fast.go): a
// row of 32-weight groups per call, the same arithmetic as encodeRef (s =
// max|w| / k in f32, q = round-half-away(w / s) from an exact f32 division,
// clamp). Rounding is
// done exactly: t = trunc(|x|), +1 when |x| − t ≥ 0.5, sign restored.
// Groups with NaN or ±Inf return ok = false for the Go reference path.

DATA absmask<>+0(SB)/4, $0x7fffffff
GLOBL absmask<>(SB), RODATA|NOPTR, $4
DATA signmask<>+0(SB)/4, $0x80000000
GLOBL signmask<>(SB), RODATA|NOPTR, $4
DATA half<>+0(SB)/4, $0x3f000000
GLOBL half<>(SB), RODATA|NOPTR, $4
DATA one<>+0(SB)/4, $0x3f800000
GLOBL one<>(SB), RODATA|NOPTR, $4
DATA maxfin<>+0(SB)/4, $0x7f7fffff
GLOBL maxfin<>(SB), RODATA|NOPTR, $4
DATA seven<>+0(SB)/4, $0x40e00000
GLOBL seven<>(SB), RODATA|NOPTR, $4
DATA f127<>+0(SB)/4, $0x42fe0000
GLOBL f127<>(SB), RODATA|NOPTR, $4
DATA i8<>+0(SB)/4, $8
GLOBL i8<>(SB), RODATA|NOPTR, $4
DATA i15<>+0(SB)/4, $15
GLOBL i15<>(SB), RODATA|NOPTR, $4
DATA i127<>+0(SB)/4, $127
GLOBL i127<>(SB), RODATA|NOPTR, $4
DATA im127<>+0(SB)/4, $-127
GLOBL im127<>(SB), RODATA|NOPTR, $4
DATA perm<>+0(SB)/4, $0
DATA perm<>+4(SB)/4, $4
DATA perm<>+8(SB)/4, $1
DATA perm<>+12(SB)/4, $5
DATA perm<>+16(SB)/4, $2
DATA perm<>+20(SB)/4, $6
DATA perm<>+24(SB)/4, $3
DATA perm<>+28(SB)/4, $7
GLOBL perm<>(SB), RODATA|NOPTR, $32

// ROUND: y = int32(round-half-away(y / s)), exactly.
#define ROUND(y) \
	VDIVPS Y10, y, y;        \
	VANDPS Y15, y, Y4;       \
	VROUNDPS $3, Y4, Y5;     \
	VSUBPS Y5, Y4, Y6;       \
	VCMPPS $13, Y14, Y6, Y7; \
	VANDPS Y13, Y7, Y7;      \
	VADDPS Y7, Y5, Y5;       \
	VANDPS Y12, y, Y6;       \
	VORPS Y6, Y5, Y5;        \
	VCVTTPS2DQ Y5, y

#define ROUND4 \
	ROUND(Y0); \
	ROUND(Y1); \
	ROUND(Y2); \
	ROUND(Y3)

// Row kernels: n consecutive full groups from src, scales written as f16
// (VCVTPS2PH, round to nearest even like float16.Fromfloat32) to sc, data
// to out. They return how many groups were done; fewer than n means group
// `done` holds NaN or ±Inf and the caller takes it to the reference path.
// One call per row lets consecutive groups overlap in the pipeline.

// ROWSCALE: X8 = max|w| of Y0..Y3 (abs in Y4..Y7), non-finite → bad;
// X10 = X8 / k, its f16 to (DX); zero scale → zero.
#define ROWSCALE(k, bad, zero) \
	VANDPS Y15, Y0, Y4;       \
	VANDPS Y15, Y1, Y5;       \
	VANDPS Y15, Y2, Y6;       \
	VANDPS Y15, Y3, Y7;       \
	VPCMPGTD Y11, Y4, Y8;     \
	VPCMPGTD Y11, Y5, Y9;     \
	VPOR Y9, Y8, Y8;          \
	VPCMPGTD Y11, Y6, Y9;     \
	VPOR Y9, Y8, Y8;          \
	VPCMPGTD Y11, Y7, Y9;     \
	VPOR Y9, Y8, Y8;          \
	VPTEST Y8, Y8;            \
	JNZ bad;                  \
	VMAXPS Y5, Y4, Y8;        \
	VMAXPS Y7, Y6, Y9;        \
	VMAXPS Y9, Y8, Y8;        \
	VEXTRACTF128 $1, Y8, X9;  \
	VMAXPS X9, X8, X8;        \
	VPERMILPS $0x4e, X8, X9;  \
	VMAXPS X9, X8, X8;        \
	VPERMILPS $0xb1, X8, X9;  \
	VMAXPS X9, X8, X8;        \
	VDIVSS k, X8, X10;        \
	VCVTPS2PH $0, X10, X9;    \
	VPEXTRW $0, X9, AX;       \
	MOVW AX, 0(DX);           \
	VMOVD X10, AX;            \
	TESTL AX, AX;             \
	JZ zero;                  \
	VBROADCASTSS X10, Y10

#define ROWCONST \
	MOVQ src+0(FP), SI;              \
	MOVQ n+8(FP), CX;                \
	MOVQ sc+16(FP), DX;              \
	MOVQ out+24(FP), DI;             \
	XORQ BX, BX;                     \
	VPBROADCASTD absmask<>(SB), Y15; \
	VPBROADCASTD half<>(SB), Y14;    \
	VPBROADCASTD one<>(SB), Y13;     \
	VPBROADCASTD signmask<>(SB), Y12; \
	VPBROADCASTD maxfin<>(SB), Y11

#define LOADF32AT \
	VMOVUPS 0(SI), Y0;  \
	VMOVUPS 32(SI), Y1; \
	VMOVUPS 64(SI), Y2; \
	VMOVUPS 96(SI), Y3

#define LOADF16AT \
	VCVTPH2PS 0(SI), Y0;  \
	VCVTPH2PS 16(SI), Y1; \
	VCVTPH2PS 32(SI), Y2; \
	VCVTPH2PS 48(SI), Y3

#define Q4STORE \
	VPBROADCASTD i8<>(SB), Y9;  \
	VPBROADCASTD i15<>(SB), Y8; \
	VPXOR Y7, Y7, Y7;           \
	VPADDD Y9, Y0, Y0;          \
	VPADDD Y9, Y1, Y1;          \
	VPADDD Y9, Y2, Y2;          \
	VPADDD Y9, Y3, Y3;          \
	VPMAXSD Y7, Y0, Y0;         \
	VPMAXSD Y7, Y1, Y1;         \
	VPMAXSD Y7, Y2, Y2;         \
	VPMAXSD Y7, Y3, Y3;         \
	VPMINSD Y8, Y0, Y0;         \
	VPMINSD Y8, Y1, Y1;         \
	VPMINSD Y8, Y2, Y2;         \
	VPMINSD Y8, Y3, Y3;         \
	VPSLLD $4, Y2, Y2;          \
	VPSLLD $4, Y3, Y3;          \
	VPOR Y2, Y0, Y0;            \
	VPOR Y3, Y1, Y1;            \
	VPACKSSDW Y1, Y0, Y0;       \
	VPERMQ $0xd8, Y0, Y0;       \
	VPACKUSWB Y0, Y0, Y0;       \
	VPERMQ $0x08, Y0, Y0;       \
	VMOVDQU X0, 0(DI)

#define Q8STORE \
	VPBROADCASTD i127<>(SB), Y9;  \
	VPBROADCASTD im127<>(SB), Y8; \
	VPMINSD Y9, Y0, Y0;           \
	VPMINSD Y9, Y1, Y1;           \
	VPMINSD Y9, Y2, Y2;           \
	VPMINSD Y9, Y3, Y3;           \
	VPMAXSD Y8, Y0, Y0;           \
	VPMAXSD Y8, Y1, Y1;           \
	VPMAXSD Y8, Y2, Y2;           \
	VPMAXSD Y8, Y3, Y3;           \
	VPACKSSDW Y1, Y0, Y0;         \
	VPACKSSDW Y3, Y2, Y2;         \
	VPACKSSWB Y2, Y0, Y0;         \
	VMOVDQU perm<>(SB), Y9;       \
	VPERMD Y0, Y9, Y0;            \
	VMOVDQU Y0, 0(DI)

// func q4RowF16(src *uint16, n int, sc *uint16, out *byte) (done int)
TEXT ·q4RowF16(SB), NOSPLIT, $0-40
	ROWCONST
q4r16loop:
	CMPQ BX, CX
	JGE q4r16done
	LOADF16AT
	ROWSCALE(seven<>(SB), q4r16done, q4r16zero)
	ROUND4
	Q4STORE
q4r16next:
	ADDQ $64, SI
	ADDQ $2, DX
	ADDQ $16, DI
	INCQ BX
	JMP q4r16loop
q4r16zero:
	MOVQ $0x8888888888888888, AX
	MOVQ AX, 0(DI)
	MOVQ AX, 8(DI)
	JMP q4r16next
q4r16done:
	MOVQ BX, done+32(FP)
	VZEROUPPER
	RET

// func q4RowF32(src *float32, n int, sc *uint16, out *byte) (done int)
TEXT ·q4RowF32(SB), NOSPLIT, $0-40
	ROWCONST
q4r32loop:
	CMPQ BX, CX
	JGE q4r32done
	LOADF32AT
	ROWSCALE(seven<>(SB), q4r32done, q4r32zero)
	ROUND4
	Q4STORE
q4r32next:
	ADDQ $128, SI
	ADDQ $2, DX
	ADDQ $16, DI
	INCQ BX
	JMP q4r32loop
q4r32zero:
	MOVQ $0x8888888888888888, AX
	MOVQ AX, 0(DI)
	MOVQ AX, 8(DI)
	JMP q4r32next
q4r32done:
	MOVQ BX, done+32(FP)
	VZEROUPPER
	RET

// func q8RowF16(src *uint16, n int, sc *uint16, out *byte) (done int)
TEXT ·q8RowF16(SB), NOSPLIT, $0-40
	ROWCONST
q8r16loop:
	CMPQ BX, CX
	JGE q8r16done
	LOADF16AT
	ROWSCALE(f127<>(SB), q8r16done, q8r16zero)
	ROUND4
	Q8STORE
q8r16next:
	ADDQ $64, SI
	ADDQ $2, DX
	ADDQ $32, DI
	INCQ BX
	JMP q8r16loop
q8r16zero:
	VPXOR Y0, Y0, Y0
	VMOVDQU Y0, 0(DI)
	JMP q8r16next
q8r16done:
	MOVQ BX, done+32(FP)
	VZEROUPPER
	RET

// func q8RowF32(src *float32, n int, sc *uint16, out *byte) (done int)
TEXT ·q8RowF32(SB), NOSPLIT, $0-40
	ROWCONST
q8r32loop:
	CMPQ BX, CX
	JGE q8r32done
	LOADF32AT
	ROWSCALE(f127<>(SB), q8r32done, q8r32zero)
	ROUND4
	Q8STORE
q8r32next:
	ADDQ $128, SI
	ADDQ $2, DX
	ADDQ $32, DI
	INCQ BX
	JMP q8r32loop
q8r32zero:
	VPXOR Y0, Y0, Y0
	VMOVDQU Y0, 0(DI)
	JMP q8r32next
q8r32done:
	MOVQ BX, done+32(FP)
	VZEROUPPER
	RET

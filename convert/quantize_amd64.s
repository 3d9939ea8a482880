//go:build !noasm

#include "textflag.h"

// AVX2 + F16C group quantizers for the converter: one 32-weight group per
// call, the same arithmetic as quant.Encode (s = max|w| / k in f32, q =
// round-half-away(w / s) from an exact f32 division, clamp). Rounding is
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

#define LOADF32 \
	MOVQ src+0(FP), SI; \
	VMOVUPS 0(SI), Y0;  \
	VMOVUPS 32(SI), Y1; \
	VMOVUPS 64(SI), Y2; \
	VMOVUPS 96(SI), Y3

#define LOADF16 \
	MOVQ src+0(FP), SI;   \
	VCVTPH2PS 0(SI), Y0;  \
	VCVTPH2PS 16(SI), Y1; \
	VCVTPH2PS 32(SI), Y2; \
	VCVTPH2PS 48(SI), Y3

// SCALE: Y15 = abs mask; checks finiteness (jump to bad), X10 = max|w|/k,
// stores it, jumps to zero when it is 0, else broadcasts it to Y10.
#define SCALE(k, bad, zero) \
	VPBROADCASTD absmask<>(SB), Y15; \
	VANDPS Y15, Y0, Y4;              \
	VANDPS Y15, Y1, Y5;              \
	VANDPS Y15, Y2, Y6;              \
	VANDPS Y15, Y3, Y7;              \
	VPBROADCASTD maxfin<>(SB), Y14;  \
	VPCMPGTD Y14, Y4, Y8;            \
	VPCMPGTD Y14, Y5, Y9;            \
	VPOR Y9, Y8, Y8;                 \
	VPCMPGTD Y14, Y6, Y9;            \
	VPOR Y9, Y8, Y8;                 \
	VPCMPGTD Y14, Y7, Y9;            \
	VPOR Y9, Y8, Y8;                 \
	VPTEST Y8, Y8;                   \
	JNZ bad;                         \
	VMAXPS Y5, Y4, Y8;               \
	VMAXPS Y7, Y6, Y9;               \
	VMAXPS Y9, Y8, Y8;               \
	VEXTRACTF128 $1, Y8, X9;         \
	VMAXPS X9, X8, X8;               \
	VPERMILPS $0x4e, X8, X9;         \
	VMAXPS X9, X8, X8;               \
	VPERMILPS $0xb1, X8, X9;         \
	VMAXPS X9, X8, X8;               \
	VDIVSS k, X8, X10;               \
	VMOVSS X10, s+16(FP);            \
	MOVB $1, ok+20(FP);              \
	VXORPS X11, X11, X11;            \
	VUCOMISS X11, X10;               \
	JEQ zero;                        \
	VBROADCASTSS X10, Y10;           \
	VPBROADCASTD half<>(SB), Y14;    \
	VPBROADCASTD one<>(SB), Y13;     \
	VPBROADCASTD signmask<>(SB), Y12

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

// Q4OUT: q+8 clamped to [0, 15]; byte j = q[j] | q[j+16]<<4.
#define Q4OUT \
	MOVQ out+8(FP), DI;             \
	VPBROADCASTD i8<>(SB), Y9;      \
	VPBROADCASTD i15<>(SB), Y8;     \
	VPXOR Y7, Y7, Y7;               \
	VPADDD Y9, Y0, Y0;              \
	VPADDD Y9, Y1, Y1;              \
	VPADDD Y9, Y2, Y2;              \
	VPADDD Y9, Y3, Y3;              \
	VPMAXSD Y7, Y0, Y0;             \
	VPMAXSD Y7, Y1, Y1;             \
	VPMAXSD Y7, Y2, Y2;             \
	VPMAXSD Y7, Y3, Y3;             \
	VPMINSD Y8, Y0, Y0;             \
	VPMINSD Y8, Y1, Y1;             \
	VPMINSD Y8, Y2, Y2;             \
	VPMINSD Y8, Y3, Y3;             \
	VPSLLD $4, Y2, Y2;              \
	VPSLLD $4, Y3, Y3;              \
	VPOR Y2, Y0, Y0;                \
	VPOR Y3, Y1, Y1;                \
	VPACKSSDW Y1, Y0, Y0;           \
	VPERMQ $0xd8, Y0, Y0;           \
	VPACKUSWB Y0, Y0, Y0;           \
	VPERMQ $0x08, Y0, Y0;           \
	VMOVDQU X0, 0(DI)

// Q8OUT: q clamped to [-127, 127], 32 int8 in order.
#define Q8OUT \
	MOVQ out+8(FP), DI;           \
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

// func q4GroupF32(src *float32, out *byte) (s float32, ok bool)
TEXT ·q4GroupF32(SB), NOSPLIT, $0-21
	LOADF32
	SCALE(seven<>(SB), q4f32bad, q4f32zero)
	ROUND4
	Q4OUT
	VZEROUPPER
	RET
q4f32zero:
	MOVQ out+8(FP), DI
	MOVQ $0x8888888888888888, AX
	MOVQ AX, 0(DI)
	MOVQ AX, 8(DI)
	VZEROUPPER
	RET
q4f32bad:
	MOVB $0, ok+20(FP)
	VZEROUPPER
	RET

// func q4GroupF16(src *uint16, out *byte) (s float32, ok bool)
TEXT ·q4GroupF16(SB), NOSPLIT, $0-21
	LOADF16
	SCALE(seven<>(SB), q4f16bad, q4f16zero)
	ROUND4
	Q4OUT
	VZEROUPPER
	RET
q4f16zero:
	MOVQ out+8(FP), DI
	MOVQ $0x8888888888888888, AX
	MOVQ AX, 0(DI)
	MOVQ AX, 8(DI)
	VZEROUPPER
	RET
q4f16bad:
	MOVB $0, ok+20(FP)
	VZEROUPPER
	RET

// func q8GroupF32(src *float32, out *byte) (s float32, ok bool)
TEXT ·q8GroupF32(SB), NOSPLIT, $0-21
	LOADF32
	SCALE(f127<>(SB), q8f32bad, q8f32zero)
	ROUND4
	Q8OUT
	VZEROUPPER
	RET
q8f32zero:
	MOVQ out+8(FP), DI
	VPXOR Y0, Y0, Y0
	VMOVDQU Y0, 0(DI)
	VZEROUPPER
	RET
q8f32bad:
	MOVB $0, ok+20(FP)
	VZEROUPPER
	RET

// func q8GroupF16(src *uint16, out *byte) (s float32, ok bool)
TEXT ·q8GroupF16(SB), NOSPLIT, $0-21
	LOADF16
	SCALE(f127<>(SB), q8f16bad, q8f16zero)
	ROUND4
	Q8OUT
	VZEROUPPER
	RET
q8f16zero:
	MOVQ out+8(FP), DI
	VPXOR Y0, Y0, Y0
	VMOVDQU Y0, 0(DI)
	VZEROUPPER
	RET
q8f16bad:
	MOVB $0, ok+20(FP)
	VZEROUPPER
	RET

//go:build !noasm

#include "textflag.h"
#include "hsum_amd64.h"

// AVX-VNNI kernels (VEX-encoded VPDPBUSD on 256-bit registers) for CPUs
// with AVX-VNNI but not AVX-512 VNNI. The Go assembler encodes VPDPBUSD
// only as EVEX (which needs AVX512_VNNI+VL), so the VEX form is spelled in
// bytes. See docs/PERFORMANCE.md ("Kernels").

// VPDPBUSDY(acc, u, s): Yacc += Σ4 Yu(unsigned bytes)·Ys(signed bytes);
// registers Y0–Y7 only (no VEX.R/B extension bits).
// VEX.256.66.0F38.W0 50 /r: C4 E2 (W=0 vvvv=~u L=1 pp=01) 50 ModRM(11 acc s).
#define VPDPBUSDY(acc, u, s) \
	BYTE $0xc4; BYTE $0xe2; BYTE $(((15-(u))<<3)|5); BYTE $0x50; BYTE $(0xc0|((acc)<<3)|(s))

DATA idx2x4<>+0(SB)/4, $0
DATA idx2x4<>+4(SB)/4, $0
DATA idx2x4<>+8(SB)/4, $0
DATA idx2x4<>+12(SB)/4, $0
DATA idx2x4<>+16(SB)/4, $1
DATA idx2x4<>+20(SB)/4, $1
DATA idx2x4<>+24(SB)/4, $1
DATA idx2x4<>+28(SB)/4, $1
GLOBL idx2x4<>(SB), RODATA|NOPTR, $32

// func q8avxvnni(sc, data *byte, rows, groups int, x8 *int8, c8 *int32, dx, y *float32)
//
// Frame: 0(SP) the row's f32 scales (lanes ≥ groups stay 0), 32(SP) the
// scales times the activation scales, broadcast one per group.
TEXT ·q8avxvnni(SB), NOSPLIT, $96-64
	MOVQ         sc+0(FP), SI
	MOVQ         data+8(FP), DI
	MOVQ         rows+16(FP), CX
	MOVQ         groups+24(FP), R8
	MOVQ         dx+48(FP), AX
	VMOVUPS      (AX), Y14
	MOVQ         y+56(FP), R9
	MOVL         $0x80808080, AX
	VMOVD        AX, X15
	VPBROADCASTD X15, Y15
	VXORPS       Y0, Y0, Y0
	VMOVUPS      Y0, (SP)
	LEAQ         (R8)(R8*1), R10

q8avrow:
	CMPQ      R8, $8
	JNE       q8avpart
	VCVTPH2PS (SI), Y0
	VMOVUPS   Y0, (SP)
	JMP       q8avconv

q8avpart:
	XORQ BX, BX

q8avsc:
	MOVWLZX   (SI)(BX*2), AX
	VMOVD     AX, X0
	VCVTPH2PS X0, X0
	VMOVSS    X0, (SP)(BX*4)
	INCQ      BX
	CMPQ      BX, R8
	JLT       q8avsc

q8avconv:
	VMOVUPS (SP), Y0
	VMULPS  Y14, Y0, Y0
	VMOVUPS Y0, 32(SP)
	VXORPS  Y6, Y6, Y6
	MOVQ    x8+32(FP), R12
	MOVQ    c8+40(FP), R13
	LEAQ    32(SP), AX
	MOVQ    R8, BX

q8avgrp:
	VMOVDQU      (DI), Y3
	VPXOR        Y15, Y3, Y3
	VMOVDQU      (R13), Y5
	VMOVDQU      (R12), Y4
	VPDPBUSDY(5, 3, 4)
	VCVTDQ2PS    Y5, Y5
	VBROADCASTSS (AX), Y1
	VFMADD231PS  Y1, Y5, Y6
	ADDQ         $32, DI
	ADDQ         $32, R12
	ADDQ         $32, R13
	ADDQ         $4, AX
	DECQ         BX
	JNZ          q8avgrp

	HSUM8(Y6, X6, X7)
	VADDSS (R9), X6, X6
	VMOVSS X6, (R9)
	ADDQ   R10, SI
	ADDQ   $4, R9
	DECQ   CX
	JNZ    q8avrow
	VZEROUPPER
	RET

// func q4avxvnni(sc, data *byte, rows, groups int, xl, xh *int8, c4 *int32, dx, y *float32)
//
// Two groups per step (32 nibble bytes); an odd last group loads 16 bytes,
// and its missing partner's lanes meet a zero scale.
TEXT ·q4avxvnni(SB), NOSPLIT, $96-72
	MOVQ         sc+0(FP), SI
	MOVQ         data+8(FP), DI
	MOVQ         rows+16(FP), CX
	MOVQ         groups+24(FP), R8
	MOVQ         dx+56(FP), AX
	VMOVUPS      (AX), Y14
	MOVQ         y+64(FP), R9
	MOVL         $0x0f0f0f0f, AX
	VMOVD        AX, X15
	VPBROADCASTD X15, Y15
	VMOVDQU      idx2x4<>(SB), Y13
	VXORPS       Y0, Y0, Y0
	VMOVUPS      Y0, (SP)
	VMOVUPS      Y0, 64(SP)
	LEAQ         (R8)(R8*1), R10

q4avrow:
	CMPQ      R8, $8
	JNE       q4avpart
	VCVTPH2PS (SI), Y0
	VMOVUPS   Y0, (SP)
	JMP       q4avconv

q4avpart:
	XORQ BX, BX

q4avsc:
	MOVWLZX   (SI)(BX*2), AX
	VMOVD     AX, X0
	VCVTPH2PS X0, X0
	VMOVSS    X0, (SP)(BX*4)
	INCQ      BX
	CMPQ      BX, R8
	JLT       q4avsc

q4avconv:
	VMOVUPS (SP), Y0
	VMULPS  Y14, Y0, Y0
	VMOVUPS Y0, 32(SP)
	VXORPS  Y6, Y6, Y6
	MOVQ    xl+32(FP), R12
	MOVQ    xh+40(FP), R13
	MOVQ    c4+48(FP), DX
	LEAQ    32(SP), AX
	MOVQ    R8, BX
	CMPQ    BX, $2
	JLT     q4avodd

q4avpair:
	VMOVDQU     (DI), Y3
	ADDQ        $32, DI

q4avstep:
	VPSRLW      $4, Y3, Y4
	VPAND       Y15, Y3, Y3
	VPAND       Y15, Y4, Y4
	VMOVDQU     (DX), Y5
	VMOVDQU     (R12), Y1
	VPDPBUSDY(5, 3, 1)
	VMOVDQU     (R13), Y2
	VPDPBUSDY(5, 4, 2)
	VCVTDQ2PS   Y5, Y5
	VPERMPS     (AX), Y13, Y7
	VFMADD231PS Y7, Y5, Y6
	ADDQ        $32, R12
	ADDQ        $32, R13
	ADDQ        $32, DX
	ADDQ        $8, AX
	SUBQ        $2, BX
	CMPQ        BX, $2
	JGE         q4avpair

q4avodd:
	TESTQ   BX, BX
	JLE     q4avsum
	VMOVDQU (DI), X3           // one group; the upper lane is zeroed
	ADDQ    $16, DI
	JMP     q4avstep

q4avsum:
	HSUM8(Y6, X6, X7)
	VADDSS (R9), X6, X6
	VMOVSS X6, (R9)
	ADDQ   R10, SI
	ADDQ   $4, R9
	DECQ   CX
	JNZ    q4avrow
	VZEROUPPER
	RET

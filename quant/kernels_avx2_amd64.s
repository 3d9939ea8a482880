//go:build !noasm

#include "textflag.h"
#include "hsum_amd64.h"

// AVX2+FMA+F16C tile kernels with float activations. See kernels_amd64.go
// for the Go signatures and docs/PERFORMANCE.md ("Kernels").

// tailmask: the 8 dwords at tailmask+4·(8−t) have their first t lanes set.
DATA tailmask<>+0(SB)/4, $-1
DATA tailmask<>+4(SB)/4, $-1
DATA tailmask<>+8(SB)/4, $-1
DATA tailmask<>+12(SB)/4, $-1
DATA tailmask<>+16(SB)/4, $-1
DATA tailmask<>+20(SB)/4, $-1
DATA tailmask<>+24(SB)/4, $-1
DATA tailmask<>+28(SB)/4, $-1
DATA tailmask<>+32(SB)/4, $0
DATA tailmask<>+36(SB)/4, $0
DATA tailmask<>+40(SB)/4, $0
DATA tailmask<>+44(SB)/4, $0
DATA tailmask<>+48(SB)/4, $0
DATA tailmask<>+52(SB)/4, $0
DATA tailmask<>+56(SB)/4, $0
DATA tailmask<>+60(SB)/4, $0
GLOBL tailmask<>(SB), RODATA|NOPTR, $64

// func f32f256(w *byte, rows, cols int, x, y *float32)
TEXT ·f32f256(SB), NOSPLIT, $0-40
	MOVQ    w+0(FP), DI
	MOVQ    rows+8(FP), CX
	MOVQ    cols+16(FP), R8
	MOVQ    x+24(FP), R14
	MOVQ    y+32(FP), R9
	MOVQ    R8, R10
	SHRQ    $3, R10            // full 8-float chunks per row
	MOVQ    R8, R11
	ANDQ    $7, R11
	SHLQ    $2, R11            // tail bytes
	LEAQ    tailmask<>+32(SB), AX
	SUBQ    R11, AX
	VMOVDQU (AX), Y13          // lanes < tail set

f32f256row:
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	MOVQ   R14, R12
	MOVQ   R10, BX
	CMPQ   BX, $2
	JLT    f32f256one

f32f256two:
	VMOVUPS     (R12), Y1
	VMOVUPS     32(R12), Y2
	VFMADD231PS (DI), Y1, Y6
	VFMADD231PS 32(DI), Y2, Y7
	ADDQ        $64, DI
	ADDQ        $64, R12
	SUBQ        $2, BX
	CMPQ        BX, $2
	JGE         f32f256two

f32f256one:
	TESTQ       BX, BX
	JZ          f32f256tail
	VMOVUPS     (R12), Y1
	VFMADD231PS (DI), Y1, Y6
	ADDQ        $32, DI
	ADDQ        $32, R12

f32f256tail:
	TESTQ       R11, R11
	JZ          f32f256sum
	VMASKMOVPS  (DI), Y13, Y2
	VMASKMOVPS  (R12), Y13, Y1
	VFMADD231PS Y2, Y1, Y7
	ADDQ        R11, DI

f32f256sum:
	VADDPS Y7, Y6, Y6
	HSUM8(Y6, X6, X7)
	VADDSS (R9), X6, X6
	VMOVSS X6, (R9)
	ADDQ   $4, R9
	DECQ   CX
	JNZ    f32f256row
	VZEROUPPER
	RET

// Each row converts row SI's G (R8) f16 scales to f32 at (SP): one 16-byte
// VCVTPH2PS when the row is full, else one at a time so nothing past the
// scale array is read. Lanes ≥ G keep the zeros stored at entry.

// func q4f256(sc, data *byte, rows, groups int, x, y *float32)
//
// Subtracts 8 from each nibble in the integer domain before converting.
// (Multiplying raw nibbles and subtracting 8·Σx per group saves those four
// instructions but cancels badly when x is large next to the product.)
TEXT ·q4f256(SB), NOSPLIT, $32-48
	MOVQ         sc+0(FP), SI
	MOVQ         data+8(FP), DI
	MOVQ         rows+16(FP), CX
	MOVQ         groups+24(FP), R8
	MOVQ         x+32(FP), R14
	MOVQ         y+40(FP), R9
	MOVL         $15, AX
	VMOVD        AX, X15
	VPBROADCASTD X15, Y15
	MOVL         $8, AX
	VMOVD        AX, X14
	VPBROADCASTD X14, Y14
	VXORPS       Y0, Y0, Y0
	VMOVUPS      Y0, (SP)
	LEAQ         (R8)(R8*1), R10

q4f256row:
	CMPQ      R8, $8
	JNE       q4f256scpart
	VCVTPH2PS (SI), Y0
	VMOVUPS   Y0, (SP)
	JMP       q4f256scdone

q4f256scpart:
	XORQ BX, BX

q4f256scloop:
	MOVWLZX   (SI)(BX*2), AX
	VMOVD     AX, X0
	VCVTPH2PS X0, X0
	VMOVSS    X0, (SP)(BX*4)
	INCQ      BX
	CMPQ      BX, R8
	JLT       q4f256scloop

q4f256scdone:
	VXORPS  Y7, Y7, Y7
	MOVQ    R14, R12
	MOVQ    SP, R13
	MOVQ    R8, BX

q4f256grp:
	VPMOVZXBD    (DI), Y1
	VPMOVZXBD    8(DI), Y2
	VPSRLD       $4, Y1, Y3
	VPSRLD       $4, Y2, Y4
	VPAND        Y15, Y1, Y1
	VPAND        Y15, Y2, Y2
	VPSUBD       Y14, Y1, Y1
	VPSUBD       Y14, Y2, Y2
	VPSUBD       Y14, Y3, Y3
	VPSUBD       Y14, Y4, Y4
	VCVTDQ2PS    Y1, Y1
	VCVTDQ2PS    Y2, Y2
	VCVTDQ2PS    Y3, Y3
	VCVTDQ2PS    Y4, Y4
	VMULPS       (R12), Y1, Y5
	VFMADD231PS  32(R12), Y2, Y5
	VFMADD231PS  64(R12), Y3, Y5
	VFMADD231PS  96(R12), Y4, Y5
	VBROADCASTSS (R13), Y6
	VFMADD231PS  Y6, Y5, Y7
	ADDQ         $16, DI
	SUBQ         $-128, R12
	ADDQ         $4, R13
	DECQ         BX
	JNZ          q4f256grp

	HSUM8(Y7, X7, X8)
	VADDSS (R9), X7, X7
	VMOVSS X7, (R9)
	ADDQ   R10, SI
	ADDQ   $4, R9
	DECQ   CX
	JNZ    q4f256row
	VZEROUPPER
	RET

// func q8f256(sc, data *byte, rows, groups int, x, y *float32)
TEXT ·q8f256(SB), NOSPLIT, $32-48
	MOVQ    sc+0(FP), SI
	MOVQ    data+8(FP), DI
	MOVQ    rows+16(FP), CX
	MOVQ    groups+24(FP), R8
	MOVQ    x+32(FP), R14
	MOVQ    y+40(FP), R9
	VXORPS  Y0, Y0, Y0
	VMOVUPS Y0, (SP)
	LEAQ    (R8)(R8*1), R10

q8f256row:
	CMPQ      R8, $8
	JNE       q8f256scpart
	VCVTPH2PS (SI), Y0
	VMOVUPS   Y0, (SP)
	JMP       q8f256scdone

q8f256scpart:
	XORQ BX, BX

q8f256scloop:
	MOVWLZX   (SI)(BX*2), AX
	VMOVD     AX, X0
	VCVTPH2PS X0, X0
	VMOVSS    X0, (SP)(BX*4)
	INCQ      BX
	CMPQ      BX, R8
	JLT       q8f256scloop

q8f256scdone:
	VXORPS Y7, Y7, Y7
	MOVQ   R14, R12
	MOVQ   SP, R13
	MOVQ   R8, BX

q8f256grp:
	VPMOVSXBD    (DI), Y1
	VPMOVSXBD    8(DI), Y2
	VPMOVSXBD    16(DI), Y3
	VPMOVSXBD    24(DI), Y4
	VCVTDQ2PS    Y1, Y1
	VCVTDQ2PS    Y2, Y2
	VCVTDQ2PS    Y3, Y3
	VCVTDQ2PS    Y4, Y4
	VMULPS       (R12), Y1, Y5
	VFMADD231PS  32(R12), Y2, Y5
	VFMADD231PS  64(R12), Y3, Y5
	VFMADD231PS  96(R12), Y4, Y5
	VBROADCASTSS (R13), Y6
	VFMADD231PS  Y6, Y5, Y7
	ADDQ         $32, DI
	SUBQ         $-128, R12
	ADDQ         $4, R13
	DECQ         BX
	JNZ          q8f256grp

	HSUM8(Y7, X7, X8)
	VADDSS (R9), X7, X7
	VMOVSS X7, (R9)
	ADDQ   R10, SI
	ADDQ   $4, R9
	DECQ   CX
	JNZ    q8f256row
	VZEROUPPER
	RET

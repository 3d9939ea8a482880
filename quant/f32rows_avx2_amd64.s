//go:build !noasm

#include "textflag.h"
#include "hsum_amd64.h"

// rowsmask: the 8 dwords at rowsmask+4·(8−t) have their first t lanes set.
DATA rowsmask<>+0(SB)/4, $-1
DATA rowsmask<>+4(SB)/4, $-1
DATA rowsmask<>+8(SB)/4, $-1
DATA rowsmask<>+12(SB)/4, $-1
DATA rowsmask<>+16(SB)/4, $-1
DATA rowsmask<>+20(SB)/4, $-1
DATA rowsmask<>+24(SB)/4, $-1
DATA rowsmask<>+28(SB)/4, $-1
DATA rowsmask<>+32(SB)/4, $0
DATA rowsmask<>+36(SB)/4, $0
DATA rowsmask<>+40(SB)/4, $0
DATA rowsmask<>+44(SB)/4, $0
DATA rowsmask<>+48(SB)/4, $0
DATA rowsmask<>+52(SB)/4, $0
DATA rowsmask<>+56(SB)/4, $0
DATA rowsmask<>+60(SB)/4, $0
GLOBL rowsmask<>(SB), RODATA|NOPTR, $64

// func f32rows256(w *float32, rows, cols, wstride int, x *float32, xstride, nx int, y *float32, ystride int)
//
// Strides in bytes. For each row, every vector's dot product with it runs
// f32f256's loop (even 8-float chunks into one accumulator, odd ones and
// the masked tail into another, their sum reduced by HSUM8, added to y):
// the row is read from memory once and from L1 for the other vectors.
// Four vectors (attention's four query heads per item) take a loop that
// loads each pair of row chunks into registers once for all four, whose
// accumulators get the same chunks in the same order.
TEXT ·f32rows256(SB), NOSPLIT, $0-72
	MOVQ    w+0(FP), DX
	MOVQ    rows+8(FP), CX
	MOVQ    cols+16(FP), R8
	MOVQ    x+32(FP), R14
	MOVQ    y+56(FP), R9
	MOVQ    R8, R10
	SHRQ    $3, R10            // full 8-float chunks per row
	MOVQ    R8, R11
	ANDQ    $7, R11
	SHLQ    $2, R11            // tail bytes
	LEAQ    rowsmask<>+32(SB), AX
	SUBQ    R11, AX
	VMOVDQU (AX), Y13          // lanes < tail set
	MOVQ    wstride+24(FP), R8
	CMPQ    nx+48(FP), $4
	JEQ     f32rowsquad

f32rowsrow:
	MOVQ R14, SI               // vector 0
	MOVQ R9, R13               // its output for this row
	MOVQ nx+48(FP), R15

f32rowsvec:
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	MOVQ   DX, DI
	MOVQ   SI, R12
	MOVQ   R10, BX
	CMPQ   BX, $2
	JLT    f32rowsone

f32rowstwo:
	VMOVUPS     (R12), Y1
	VMOVUPS     32(R12), Y2
	VFMADD231PS (DI), Y1, Y6
	VFMADD231PS 32(DI), Y2, Y7
	ADDQ        $64, DI
	ADDQ        $64, R12
	SUBQ        $2, BX
	CMPQ        BX, $2
	JGE         f32rowstwo

f32rowsone:
	TESTQ       BX, BX
	JZ          f32rowstail
	VMOVUPS     (R12), Y1
	VFMADD231PS (DI), Y1, Y6
	ADDQ        $32, DI
	ADDQ        $32, R12

f32rowstail:
	TESTQ       R11, R11
	JZ          f32rowssum
	VMASKMOVPS  (DI), Y13, Y2
	VMASKMOVPS  (R12), Y13, Y1
	VFMADD231PS Y2, Y1, Y7

f32rowssum:
	VADDPS Y7, Y6, Y6
	HSUM8(Y6, X6, X7)
	VADDSS (R13), X6, X6
	VMOVSS X6, (R13)
	ADDQ   xstride+40(FP), SI
	ADDQ   ystride+64(FP), R13
	DECQ   R15
	JNZ    f32rowsvec

	ADDQ $4, R9
	ADDQ R8, DX
	DECQ CX
	JNZ  f32rowsrow
	VZEROUPPER
	RET

f32rowsquad:
	MOVQ xstride+40(FP), AX
	MOVQ ystride+64(FP), SI

f32rowsqrow:
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	MOVQ   DX, DI
	MOVQ   R14, R12            // vectors 0 and 1: (R12), (R12)(AX*1)
	LEAQ   (R14)(AX*2), R13    // vectors 2 and 3: (R13), (R13)(AX*1)
	MOVQ   R10, BX
	CMPQ   BX, $2
	JLT    f32rowsqone

f32rowsqtwo:
	VMOVUPS     (DI), Y8
	VMOVUPS     32(DI), Y9
	VFMADD231PS (R12), Y8, Y0
	VFMADD231PS 32(R12), Y9, Y1
	VFMADD231PS (R12)(AX*1), Y8, Y2
	VFMADD231PS 32(R12)(AX*1), Y9, Y3
	VFMADD231PS (R13), Y8, Y4
	VFMADD231PS 32(R13), Y9, Y5
	VFMADD231PS (R13)(AX*1), Y8, Y6
	VFMADD231PS 32(R13)(AX*1), Y9, Y7
	ADDQ        $64, DI
	ADDQ        $64, R12
	ADDQ        $64, R13
	SUBQ        $2, BX
	CMPQ        BX, $2
	JGE         f32rowsqtwo

f32rowsqone:
	TESTQ       BX, BX
	JZ          f32rowsqtail
	VMOVUPS     (DI), Y8
	VFMADD231PS (R12), Y8, Y0
	VFMADD231PS (R12)(AX*1), Y8, Y2
	VFMADD231PS (R13), Y8, Y4
	VFMADD231PS (R13)(AX*1), Y8, Y6
	ADDQ        $32, DI
	ADDQ        $32, R12
	ADDQ        $32, R13

f32rowsqtail:
	TESTQ       R11, R11
	JZ          f32rowsqsum
	VMASKMOVPS  (DI), Y13, Y8
	VMASKMOVPS  (R12), Y13, Y9
	VFMADD231PS Y8, Y9, Y1
	VMASKMOVPS  (R12)(AX*1), Y13, Y9
	VFMADD231PS Y8, Y9, Y3
	VMASKMOVPS  (R13), Y13, Y9
	VFMADD231PS Y8, Y9, Y5
	VMASKMOVPS  (R13)(AX*1), Y13, Y9
	VFMADD231PS Y8, Y9, Y7

f32rowsqsum:
	VADDPS Y1, Y0, Y0
	HSUM8(Y0, X0, X8)
	VADDSS (R9), X0, X0
	VMOVSS X0, (R9)
	VADDPS Y3, Y2, Y2
	HSUM8(Y2, X2, X9)
	VADDSS (R9)(SI*1), X2, X2
	VMOVSS X2, (R9)(SI*1)
	LEAQ   (R9)(SI*2), R15
	VADDPS Y5, Y4, Y4
	HSUM8(Y4, X4, X10)
	VADDSS (R15), X4, X4
	VMOVSS X4, (R15)
	VADDPS Y7, Y6, Y6
	HSUM8(Y6, X6, X11)
	VADDSS (R15)(SI*1), X6, X6
	VMOVSS X6, (R15)(SI*1)

	ADDQ $4, R9
	ADDQ R8, DX
	DECQ CX
	JNZ  f32rowsqrow
	VZEROUPPER
	RET

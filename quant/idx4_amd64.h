// IDX4 defines a 64-byte lane → group map for expanding per-group values
// across the lanes of a zmm register: four lanes each for groups a, b, c, d
// (kernels_vnnirl_amd64.s; the generated vnni family has its own, _asm/vnni.go).
#define IDX4(name, a, b, c, d) \
	DATA name+0(SB)/4, $a;  DATA name+4(SB)/4, $a;  DATA name+8(SB)/4, $a;  DATA name+12(SB)/4, $a; \
	DATA name+16(SB)/4, $b; DATA name+20(SB)/4, $b; DATA name+24(SB)/4, $b; DATA name+28(SB)/4, $b; \
	DATA name+32(SB)/4, $c; DATA name+36(SB)/4, $c; DATA name+40(SB)/4, $c; DATA name+44(SB)/4, $c; \
	DATA name+48(SB)/4, $d; DATA name+52(SB)/4, $d; DATA name+56(SB)/4, $d; DATA name+60(SB)/4, $d; \
	GLOBL name(SB), RODATA|NOPTR, $64

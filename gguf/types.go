package gguf

import "fmt"

// ValueType is a GGUF metadata value type tag (gguf_type in gguf.h);
// numbers are on disk.
type ValueType uint32

// Every GGUF value type (gguf.h). The reader accepts all of them; the
// writer uses the ones cflow's metadata needs.
const (
	TypeUint8   ValueType = 0
	TypeInt8    ValueType = 1
	TypeUint16  ValueType = 2
	TypeInt16   ValueType = 3
	TypeUint32  ValueType = 4
	TypeInt32   ValueType = 5
	TypeFloat32 ValueType = 6
	TypeBool    ValueType = 7
	TypeString  ValueType = 8
	TypeArray   ValueType = 9
	TypeUint64  ValueType = 10
	TypeInt64   ValueType = 11
	TypeFloat64 ValueType = 12
)

// valueTypeNames are gguf.cpp's names (gguf_type_name), so messages match
// llama.cpp's.
var valueTypeNames = [...]string{"u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "str", "arr", "u64", "i64", "f64"}

// size is the on-disk size of one scalar of type t; 0 for strings, arrays
// and unknown tags.
func (t ValueType) size() int {
	switch t {
	case TypeUint8, TypeInt8, TypeBool:
		return 1
	case TypeUint16, TypeInt16:
		return 2
	case TypeUint32, TypeInt32, TypeFloat32:
		return 4
	case TypeUint64, TypeInt64, TypeFloat64:
		return 8
	}
	return 0
}

func (t ValueType) String() string {
	if int(t) < len(valueTypeNames) {
		return valueTypeNames[t]
	}
	return fmt.Sprintf("gguf_type(%d)", uint32(t))
}

// GGMLType is a tensor's element type (ggml_type in ggml.h); numbers are on
// disk.
type GGMLType uint32

// The ggml types cflow's tiles map onto and the ones an import may meet
// (every type a GGUF file can hold is in ggmlTypes).
const (
	GGMLF32  GGMLType = 0
	GGMLF16  GGMLType = 1
	GGMLQ4_0 GGMLType = 2
	GGMLQ4_1 GGMLType = 3
	GGMLQ5_0 GGMLType = 6
	GGMLQ5_1 GGMLType = 7
	GGMLQ8_0 GGMLType = 8
	GGMLQ2_K GGMLType = 10
	GGMLQ3_K GGMLType = 11
	GGMLQ4_K GGMLType = 12
	GGMLQ5_K GGMLType = 13
	GGMLQ6_K GGMLType = 14
	GGMLBF16 GGMLType = 30
)

// ggmlTypeInfo is one ggml type's name, elements per block and bytes per
// block, as gguf-py's GGML_QUANT_SIZES and ggml.c's type_traits give them.
type ggmlTypeInfo struct {
	name  string
	block int
	size  int
}

const qkK = 256 // QK_K: elements per K-quant super-block

// ggmlTypes is indexed by GGMLType; a zero entry is a number ggml never
// used or has removed (Q4_2, Q4_3, the Q4_0_4_4 family), which a file must
// not hold.
var ggmlTypes = [...]ggmlTypeInfo{
	0:  {"F32", 1, 4},
	1:  {"F16", 1, 2},
	2:  {"Q4_0", 32, 2 + 16},
	3:  {"Q4_1", 32, 2 + 2 + 16},
	6:  {"Q5_0", 32, 2 + 4 + 16},
	7:  {"Q5_1", 32, 2 + 2 + 4 + 16},
	8:  {"Q8_0", 32, 2 + 32},
	9:  {"Q8_1", 32, 4 + 4 + 32},
	10: {"Q2_K", qkK, 2 + 2 + qkK/16 + qkK/4},
	11: {"Q3_K", qkK, 2 + qkK/4 + qkK/8 + 12},
	12: {"Q4_K", qkK, 2 + 2 + qkK/2 + 12},
	13: {"Q5_K", qkK, 2 + 2 + qkK/2 + qkK/8 + 12},
	14: {"Q6_K", qkK, 2 + qkK/2 + qkK/4 + qkK/16},
	15: {"Q8_K", qkK, 4 + qkK + qkK/8},
	16: {"IQ2_XXS", qkK, 2 + qkK/4},
	17: {"IQ2_XS", qkK, 2 + qkK/4 + qkK/32},
	18: {"IQ3_XXS", qkK, 2 + qkK/4 + qkK/8},
	19: {"IQ1_S", qkK, 2 + qkK/8 + qkK/16},
	20: {"IQ4_NL", 32, 2 + 16},
	21: {"IQ3_S", qkK, 2 + qkK/4 + qkK/8 + qkK/32 + 4},
	22: {"IQ2_S", qkK, 2 + qkK/4 + qkK/16},
	23: {"IQ4_XS", qkK, 2 + 2 + qkK/2 + qkK/64},
	24: {"I8", 1, 1},
	25: {"I16", 1, 2},
	26: {"I32", 1, 4},
	27: {"I64", 1, 8},
	28: {"F64", 1, 8},
	29: {"IQ1_M", qkK, qkK/8 + qkK/16 + qkK/32},
	30: {"BF16", 1, 2},
	34: {"TQ1_0", qkK, 2 + 4*13},
	35: {"TQ2_0", qkK, 2 + 64},
	39: {"MXFP4", 32, 1 + 16},
	40: {"NVFP4", 64, 4 + 32},
	41: {"Q1_0", 128, 2 + 16},
	42: {"Q2_0", 64, 2 + 16},
}

func (t GGMLType) info() (ggmlTypeInfo, bool) {
	if int(t) < len(ggmlTypes) && ggmlTypes[t].block != 0 {
		return ggmlTypes[t], true
	}
	return ggmlTypeInfo{}, false
}

// Valid reports whether t is a type a GGUF file may hold.
func (t GGMLType) Valid() bool { _, ok := t.info(); return ok }

// BlockElems is the number of elements one block of t holds (1 for the
// float and integer types); a row's length must be a multiple of it.
func (t GGMLType) BlockElems() int { i, _ := t.info(); return i.block }

// BlockBytes is the size of one block of t (of one element for the float
// and integer types); tensor sizes are computed from it.
func (t GGMLType) BlockBytes() int { i, _ := t.info(); return i.size }

// RowBytes is the size of one row of n elements; n must be a multiple of
// BlockElems.
func (t GGMLType) RowBytes(n int) int {
	i, ok := t.info()
	if !ok {
		return 0
	}
	return n / i.block * i.size
}

func (t GGMLType) String() string {
	if i, ok := t.info(); ok {
		return i.name
	}
	return fmt.Sprintf("ggml_type(%d)", uint32(t))
}

package gguf

import (
	"encoding/binary"
	"math"
)

// Magic and Version open every file this package writes.
const (
	Magic   = "GGUF"
	Version = 3
)

// Alignment is the general.alignment this package writes: tensor data
// starts, and every tensor's data offset, are multiples of it. 32 is GGUF's
// default, which keeps readers that ignore the key correct.
const Alignment = 32

// kv is one metadata entry, already encoded as type tag + value bytes.
type kv struct {
	key string
	val []byte
}

// kvList builds the metadata section in insertion order.
type kvList []kv

func appendString(b []byte, s string) []byte {
	b = binary.LittleEndian.AppendUint64(b, uint64(len(s)))
	return append(b, s...)
}

func tag(t ValueType) []byte { return binary.LittleEndian.AppendUint32(nil, uint32(t)) }

func (l *kvList) u32(k string, v uint32) {
	*l = append(*l, kv{k, binary.LittleEndian.AppendUint32(tag(TypeUint32), v)})
}

func (l *kvList) f32(k string, v float32) {
	*l = append(*l, kv{k, binary.LittleEndian.AppendUint32(tag(TypeFloat32), math.Float32bits(v))})
}

func (l *kvList) boolean(k string, v bool) {
	b := byte(0)
	if v {
		b = 1
	}
	*l = append(*l, kv{k, append(tag(TypeBool), b)})
}

func (l *kvList) str(k, v string) { *l = append(*l, kv{k, appendString(tag(TypeString), v)}) }

func arrayHead(t ValueType, n int) []byte {
	b := binary.LittleEndian.AppendUint32(tag(TypeArray), uint32(t))
	return binary.LittleEndian.AppendUint64(b, uint64(n))
}

func (l *kvList) strs(k string, v []string) {
	b := arrayHead(TypeString, len(v))
	for _, s := range v {
		b = appendString(b, s)
	}
	*l = append(*l, kv{k, b})
}

func (l *kvList) f32s(k string, v []float32) {
	b := arrayHead(TypeFloat32, len(v))
	for _, x := range v {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
	}
	*l = append(*l, kv{k, b})
}

func (l *kvList) i32s(k string, v []int32) {
	b := arrayHead(TypeInt32, len(v))
	for _, x := range v {
		b = binary.LittleEndian.AppendUint32(b, uint32(x))
	}
	*l = append(*l, kv{k, b})
}

func (l *kvList) bools(k string, v []bool) {
	b := arrayHead(TypeBool, len(v))
	for _, x := range v {
		c := byte(0)
		if x {
			c = 1
		}
		b = append(b, c)
	}
	*l = append(*l, kv{k, b})
}

func alignUp(n int64) int64 { return (n + Alignment - 1) / Alignment * Alignment }

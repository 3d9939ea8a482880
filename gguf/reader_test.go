package gguf_test

import (
	"encoding/binary"
	"fmt"
	"math"
)

// This file is a minimal GGUF v3 reader written from the layout in
// llama.cpp's gguf.h, independent of the writer, so tests check the bytes
// against the format and not against the writer's own idea of it.

type ggufKV struct {
	typ   uint32
	value any // uint32, int32, float32, bool, string, uint64, []any
}

type ggufTensor struct {
	name   string
	dims   []uint64
	typ    uint32
	offset uint64
	data   []byte
}

type ggufFile struct {
	version   uint32
	kv        map[string]ggufKV
	kvOrder   []string
	tensors   []ggufTensor
	byName    map[string]*ggufTensor
	dataStart int
	alignment int
}

type cursor struct {
	b   []byte
	off int
}

func (c *cursor) need(n int) error {
	if n < 0 || c.off+n > len(c.b) {
		return fmt.Errorf("truncated at %d (need %d)", c.off, n)
	}
	return nil
}

func (c *cursor) u32() (uint32, error) {
	if err := c.need(4); err != nil {
		return 0, err
	}
	v := binary.LittleEndian.Uint32(c.b[c.off:])
	c.off += 4
	return v, nil
}

func (c *cursor) u64() (uint64, error) {
	if err := c.need(8); err != nil {
		return 0, err
	}
	v := binary.LittleEndian.Uint64(c.b[c.off:])
	c.off += 8
	return v, nil
}

func (c *cursor) str() (string, error) {
	n, err := c.u64()
	if err != nil {
		return "", err
	}
	if err := c.need(int(n)); err != nil {
		return "", err
	}
	s := string(c.b[c.off : c.off+int(n)])
	c.off += int(n)
	return s, nil
}

// scalar reads one value of GGUF type t (all 13 types, arrays recursive).
func (c *cursor) value(t uint32) (any, error) {
	size := map[uint32]int{0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
	switch t {
	case 8:
		return c.str()
	case 9:
		et, err := c.u32()
		if err != nil {
			return nil, err
		}
		n, err := c.u64()
		if err != nil {
			return nil, err
		}
		if n > uint64(len(c.b)) {
			return nil, fmt.Errorf("array of %d elements", n)
		}
		out := make([]any, n)
		for i := range out {
			if out[i], err = c.value(et); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	n, ok := size[t]
	if !ok {
		return nil, fmt.Errorf("unknown value type %d at %d", t, c.off)
	}
	if err := c.need(n); err != nil {
		return nil, err
	}
	b := c.b[c.off : c.off+n]
	c.off += n
	switch t {
	case 4:
		return binary.LittleEndian.Uint32(b), nil
	case 5:
		return int32(binary.LittleEndian.Uint32(b)), nil
	case 6:
		return math.Float32frombits(binary.LittleEndian.Uint32(b)), nil
	case 7:
		if b[0] > 1 {
			return nil, fmt.Errorf("bool byte %d", b[0])
		}
		return b[0] == 1, nil
	case 10:
		return binary.LittleEndian.Uint64(b), nil
	}
	return append([]byte(nil), b...), nil
}

// ggmlSize is the data size of a tensor: F32 4 bytes per element, Q4_0 18
// and Q8_0 34 bytes per 32-element block along dims[0].
func ggmlSize(typ uint32, dims []uint64) (int, error) {
	n := 1
	for _, d := range dims[1:] {
		n *= int(d)
	}
	switch typ {
	case 0:
		return n * int(dims[0]) * 4, nil
	case 2, 8:
		if dims[0]%32 != 0 {
			return 0, fmt.Errorf("row length %d not a multiple of 32 for type %d", dims[0], typ)
		}
		bb := 18
		if typ == 8 {
			bb = 34
		}
		return n * int(dims[0]) / 32 * bb, nil
	}
	return 0, fmt.Errorf("unexpected ggml type %d", typ)
}

func parseGGUF(b []byte) (*ggufFile, error) {
	c := &cursor{b: b}
	if err := c.need(4); err != nil || string(b[:4]) != "GGUF" {
		return nil, fmt.Errorf("bad magic")
	}
	c.off = 4
	f := &ggufFile{kv: map[string]ggufKV{}, byName: map[string]*ggufTensor{}, alignment: 32}
	var err error
	if f.version, err = c.u32(); err != nil {
		return nil, err
	}
	nt, err := c.u64()
	if err != nil {
		return nil, err
	}
	nkv, err := c.u64()
	if err != nil {
		return nil, err
	}
	for i := uint64(0); i < nkv; i++ {
		k, err := c.str()
		if err != nil {
			return nil, err
		}
		t, err := c.u32()
		if err != nil {
			return nil, err
		}
		v, err := c.value(t)
		if err != nil {
			return nil, fmt.Errorf("kv %q: %w", k, err)
		}
		if _, dup := f.kv[k]; dup {
			return nil, fmt.Errorf("duplicate key %q", k)
		}
		f.kv[k] = ggufKV{t, v}
		f.kvOrder = append(f.kvOrder, k)
	}
	if a, ok := f.kv["general.alignment"]; ok {
		f.alignment = int(a.value.(uint32))
	}
	for i := uint64(0); i < nt; i++ {
		var t ggufTensor
		if t.name, err = c.str(); err != nil {
			return nil, err
		}
		nd, err := c.u32()
		if err != nil {
			return nil, err
		}
		for j := uint32(0); j < nd; j++ {
			d, err := c.u64()
			if err != nil {
				return nil, err
			}
			t.dims = append(t.dims, d)
		}
		if t.typ, err = c.u32(); err != nil {
			return nil, err
		}
		if t.offset, err = c.u64(); err != nil {
			return nil, err
		}
		f.tensors = append(f.tensors, t)
	}
	f.dataStart = (c.off + f.alignment - 1) / f.alignment * f.alignment
	for _, p := range b[c.off:min(f.dataStart, len(b))] {
		if p != 0 {
			return nil, fmt.Errorf("non-zero padding before data")
		}
	}
	end := 0
	for i := range f.tensors {
		t := &f.tensors[i]
		if int(t.offset)%f.alignment != 0 {
			return nil, fmt.Errorf("tensor %s offset %d not aligned to %d", t.name, t.offset, f.alignment)
		}
		if int(t.offset) < end {
			return nil, fmt.Errorf("tensor %s at %d overlaps the previous one (ends %d)", t.name, t.offset, end)
		}
		n, err := ggmlSize(t.typ, t.dims)
		if err != nil {
			return nil, fmt.Errorf("tensor %s: %w", t.name, err)
		}
		lo := f.dataStart + int(t.offset)
		if lo+n > len(b) {
			return nil, fmt.Errorf("tensor %s data past the end of the file", t.name)
		}
		t.data = b[lo : lo+n]
		end = int(t.offset) + n
		if _, dup := f.byName[t.name]; dup {
			return nil, fmt.Errorf("duplicate tensor %s", t.name)
		}
		f.byName[t.name] = t
	}
	return f, nil
}

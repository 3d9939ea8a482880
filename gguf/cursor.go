package gguf

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"
)

// cursor reads the header sequentially through a window of the file,
// checking every length against the bytes left before it allocates or
// reads.
type cursor struct {
	r      io.ReaderAt
	size   int64
	off    int64
	buf    []byte
	bufOff int64
}

const cursorWindow = 1 << 16

func bytesReaderAt(b []byte) io.ReaderAt { return bytes.NewReader(b) }

func (c *cursor) left() int64 { return c.size - c.off }

// read returns the next n bytes (valid until the next call).
func (c *cursor) read(n int64, what string) ([]byte, error) {
	if n < 0 || n > c.left() {
		return nil, &FormatError{c.off, fmt.Sprintf("%s: %d bytes past the end of the file (%d left)", what, n, max(c.left(), 0))}
	}
	if c.off < c.bufOff || c.off+n > c.bufOff+int64(len(c.buf)) {
		w := min(max(n, cursorWindow), c.left())
		if int64(cap(c.buf)) < w {
			c.buf = make([]byte, w)
		}
		c.buf = c.buf[:w]
		if _, err := c.r.ReadAt(c.buf, c.off); err != nil && !(err == io.EOF && c.off+w == c.size) {
			return nil, fmt.Errorf("gguf: reading %s at %d: %w", what, c.off, err)
		}
		c.bufOff = c.off
	}
	b := c.buf[c.off-c.bufOff : c.off-c.bufOff+n]
	c.off += n
	return b, nil
}

func (c *cursor) u32(what string) (uint32, error) {
	b, err := c.read(4, what)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint32(b), nil
}

func (c *cursor) u64(what string) (uint64, error) {
	b, err := c.read(8, what)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(b), nil
}

func (c *cursor) str(what string) (string, error) {
	n, err := c.u64(what + " length")
	if err != nil {
		return "", err
	}
	if n > uint64(c.left()) {
		return "", &FormatError{c.off - 8, fmt.Sprintf("%s of %d bytes runs past the end of the file (%d left)", what, n, c.left())}
	}
	b, err := c.read(int64(n), what)
	return string(b), err
}

// strFast reads a string when it lies whole inside the window, the common
// case for the long token arrays; false (nothing consumed) sends the caller
// to str, which checks and reports.
func (c *cursor) strFast() (string, bool) {
	p := c.off - c.bufOff
	if c.off < c.bufOff || p+8 > int64(len(c.buf)) {
		return "", false
	}
	n := binary.LittleEndian.Uint64(c.buf[p:])
	if n > uint64(int64(len(c.buf))-p-8) {
		return "", false
	}
	s := string(c.buf[p+8 : p+8+int64(n)])
	c.off += 8 + int64(n)
	return s, true
}

// value reads one metadata value (its tag first) of the entry key.
func (c *cursor) value(key string) (Value, error) {
	tagOff := c.off
	t, err := c.u32("value type of " + key)
	if err != nil {
		return Value{}, err
	}
	v := Value{Type: ValueType(t)}
	switch {
	case v.Type == TypeArray:
		et, err := c.u32("array element type of " + key)
		if err != nil {
			return Value{}, err
		}
		v.Elem = ValueType(et)
		n, err := c.u64("array length of " + key)
		if err != nil {
			return Value{}, err
		}
		v.v, err = c.array(key, v.Elem, n, c.off-8)
		return v, err
	case v.Type == TypeString:
		v.v, err = c.str("value of " + key)
		return v, err
	case v.Type.size() == 0:
		return Value{}, &FormatError{tagOff, fmt.Sprintf("metadata %q has unknown value type %d", key, t)}
	}
	b, err := c.read(int64(v.Type.size()), "value of "+key)
	if err != nil {
		return Value{}, err
	}
	v.v, err = scalar(v.Type, b)
	if err != nil {
		return Value{}, &FormatError{tagOff + 4, fmt.Sprintf("metadata %q: %v", key, err)}
	}
	return v, nil
}

// array reads n elements of type et. The count is checked against the
// bytes left (each string takes at least its 8-byte length) before the
// slice is made.
func (c *cursor) array(key string, et ValueType, n uint64, nOff int64) (any, error) {
	per := uint64(et.size())
	switch et {
	case TypeString:
		per = 8
	case TypeArray:
		return nil, &FormatError{nOff - 4, fmt.Sprintf("metadata %q is an array of arrays, which GGUF does not allow", key)}
	}
	if per == 0 {
		return nil, &FormatError{nOff - 4, fmt.Sprintf("metadata %q is an array of unknown value type %d", key, uint32(et))}
	}
	if n > uint64(c.left())/per {
		return nil, &FormatError{nOff, fmt.Sprintf("metadata %q: an array of %d %s runs past the end of the file (%d bytes left)", key, n, et, c.left())}
	}
	if et == TypeString {
		out := make([]string, n)
		for i := range out {
			s, ok := c.strFast()
			if !ok {
				var err error
				if s, err = c.str(fmt.Sprintf("element %d of %s", i, key)); err != nil {
					return nil, err
				}
			}
			out[i] = s
		}
		return out, nil
	}
	start := c.off
	b, err := c.read(int64(n*per), "array "+key)
	if err != nil {
		return nil, err
	}
	out, err := scalars(et, b, int(n))
	if err != nil {
		return nil, &FormatError{start, fmt.Sprintf("metadata %q: %v", key, err)}
	}
	return out, nil
}

func scalar(t ValueType, b []byte) (any, error) {
	le := binary.LittleEndian
	switch t {
	case TypeUint8:
		return b[0], nil
	case TypeInt8:
		return int8(b[0]), nil
	case TypeUint16:
		return le.Uint16(b), nil
	case TypeInt16:
		return int16(le.Uint16(b)), nil
	case TypeUint32:
		return le.Uint32(b), nil
	case TypeInt32:
		return int32(le.Uint32(b)), nil
	case TypeFloat32:
		return math.Float32frombits(le.Uint32(b)), nil
	case TypeBool:
		if b[0] > 1 {
			return nil, fmt.Errorf("bool byte %d is neither 0 nor 1", b[0])
		}
		return b[0] == 1, nil
	case TypeUint64:
		return le.Uint64(b), nil
	case TypeInt64:
		return int64(le.Uint64(b)), nil
	case TypeFloat64:
		return math.Float64frombits(le.Uint64(b)), nil
	}
	return nil, fmt.Errorf("value type %d", t)
}

// scalars decodes n elements of t into a typed slice ([]uint8 … []float64,
// []bool).
func scalars(t ValueType, b []byte, n int) (any, error) {
	sz := t.size()
	switch t {
	case TypeUint8:
		return append([]uint8(nil), b...), nil
	case TypeInt8:
		return fill[int8](t, b, n, sz)
	case TypeUint16:
		return fill[uint16](t, b, n, sz)
	case TypeInt16:
		return fill[int16](t, b, n, sz)
	case TypeUint32:
		return fill[uint32](t, b, n, sz)
	case TypeInt32:
		return fill[int32](t, b, n, sz)
	case TypeFloat32:
		return fill[float32](t, b, n, sz)
	case TypeBool:
		return fill[bool](t, b, n, sz)
	case TypeUint64:
		return fill[uint64](t, b, n, sz)
	case TypeInt64:
		return fill[int64](t, b, n, sz)
	case TypeFloat64:
		return fill[float64](t, b, n, sz)
	}
	return nil, fmt.Errorf("value type %d", t)
}

func fill[T any](t ValueType, b []byte, n, sz int) ([]T, error) {
	out := make([]T, n)
	for i := range out {
		v, err := scalar(t, b[i*sz:(i+1)*sz])
		if err != nil {
			return nil, fmt.Errorf("element %d: %v", i, err)
		}
		out[i] = v.(T)
	}
	return out, nil
}

package gguf

import (
	"fmt"
	"math"
)

// KV is one metadata entry; Off is where its key starts in the file, so a
// value of the wrong type is reported where it lies.
type KV struct {
	Key   string
	Value Value
	Off   int64
}

// Value is a typed metadata value: Type is its tag; for arrays Elem is the
// element type. The Go value is one of uint8, int8, uint16, int16, uint32,
// int32, float32, bool, string, uint64, int64, float64, or a slice of one
// of them for an array.
type Value struct {
	Type ValueType
	Elem ValueType
	v    any
}

// Any returns the Go value (see Value).
func (v Value) Any() any { return v.v }

// TypeName is the value's type as gguf.cpp names it ("u32", "arr[str]").
func (v Value) TypeName() string {
	if v.Type == TypeArray {
		return "arr[" + v.Elem.String() + "]"
	}
	return v.Type.String()
}

// Lookup returns the entry for key, nil when the file has none.
func (f *File) Lookup(key string) *KV {
	i, ok := f.kvs[key]
	if !ok {
		return nil
	}
	return &f.KVs[i]
}

func (kv *KV) wrongType(want string) error {
	return &FormatError{kv.Off, fmt.Sprintf("metadata %q is %s, want %s", kv.Key, kv.Value.TypeName(), want)}
}

// String returns a str value.
func (kv *KV) String() (string, error) {
	s, ok := kv.Value.v.(string)
	if !ok {
		return "", kv.wrongType("str")
	}
	return s, nil
}

// Bool returns a bool value.
func (kv *KV) Bool() (bool, error) {
	b, ok := kv.Value.v.(bool)
	if !ok {
		return false, kv.wrongType("bool")
	}
	return b, nil
}

// Int returns an integer value of any integer type (writers differ: token
// ids are u32 from gguf-py, i32 from some converters).
func (kv *KV) Int() (int64, error) {
	x, ok := asInt(kv.Value.v)
	if !ok {
		return 0, kv.wrongType("an integer")
	}
	return x, nil
}

// Float returns an f32 or f64 value.
func (kv *KV) Float() (float64, error) {
	switch x := kv.Value.v.(type) {
	case float32:
		return float64(x), nil
	case float64:
		return x, nil
	}
	return 0, kv.wrongType("f32")
}

// Strings returns an arr[str] value.
func (kv *KV) Strings() ([]string, error) {
	s, ok := kv.Value.v.([]string)
	if !ok {
		return nil, kv.wrongType("arr[str]")
	}
	return s, nil
}

// Float32s returns an arr[f32] value.
func (kv *KV) Float32s() ([]float32, error) {
	s, ok := kv.Value.v.([]float32)
	if !ok {
		return nil, kv.wrongType("arr[f32]")
	}
	return s, nil
}

// Ints returns an array of any integer type as int64s.
func (kv *KV) Ints() ([]int64, error) {
	var out []int64
	add := func(n int, at func(int) (int64, bool)) bool {
		out = make([]int64, n)
		for i := range out {
			x, ok := at(i)
			if !ok {
				return false
			}
			out[i] = x
		}
		return true
	}
	var ok bool
	switch s := kv.Value.v.(type) {
	case []uint8:
		ok = add(len(s), func(i int) (int64, bool) { return asInt(s[i]) })
	case []int8:
		ok = add(len(s), func(i int) (int64, bool) { return asInt(s[i]) })
	case []uint16:
		ok = add(len(s), func(i int) (int64, bool) { return asInt(s[i]) })
	case []int16:
		ok = add(len(s), func(i int) (int64, bool) { return asInt(s[i]) })
	case []uint32:
		ok = add(len(s), func(i int) (int64, bool) { return asInt(s[i]) })
	case []int32:
		ok = add(len(s), func(i int) (int64, bool) { return asInt(s[i]) })
	case []uint64:
		ok = add(len(s), func(i int) (int64, bool) { return asInt(s[i]) })
	case []int64:
		ok = add(len(s), func(i int) (int64, bool) { return asInt(s[i]) })
	}
	if !ok {
		return nil, kv.wrongType("an integer array")
	}
	return out, nil
}

func asInt(v any) (int64, bool) {
	switch x := v.(type) {
	case uint8:
		return int64(x), true
	case int8:
		return int64(x), true
	case uint16:
		return int64(x), true
	case int16:
		return int64(x), true
	case uint32:
		return int64(x), true
	case int32:
		return int64(x), true
	case uint64:
		return int64(x), x <= math.MaxInt64
	case int64:
		return x, true
	}
	return 0, false
}

// StringOr returns key's str value, def when the file has no such key.
func (f *File) StringOr(key, def string) (string, error) {
	if kv := f.Lookup(key); kv != nil {
		return kv.String()
	}
	return def, nil
}

// BoolOr returns key's bool value, def when absent.
func (f *File) BoolOr(key string, def bool) (bool, error) {
	if kv := f.Lookup(key); kv != nil {
		return kv.Bool()
	}
	return def, nil
}

// IntOr returns key's integer value, def when absent.
func (f *File) IntOr(key string, def int64) (int64, error) {
	if kv := f.Lookup(key); kv != nil {
		return kv.Int()
	}
	return def, nil
}

// FloatOr returns key's float value, def when absent.
func (f *File) FloatOr(key string, def float64) (float64, error) {
	if kv := f.Lookup(key); kv != nil {
		return kv.Float()
	}
	return def, nil
}

package convert

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
)

// cfgMap is config.json kept as decoded JSON: HF configs differ per model
// family and carry nulls, lists and nested objects, so fields are read by
// name with typed getters that report the file and key on a type mismatch.
type cfgMap struct {
	file string
	m    map[string]any
	raw  []byte // the file, for the families' typed decoding (hf.go)
}

func parseConfig(file string, b []byte) (cfgMap, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return cfgMap{}, fmt.Errorf("%s: not a JSON object: %v", file, err)
	}
	if m == nil {
		return cfgMap{}, fmt.Errorf("%s: not a JSON object", file)
	}
	return cfgMap{file: file, m: m, raw: b}, nil
}

// present reports whether key exists with a non-null value.
func (c cfgMap) present(key string) bool { v, ok := c.m[key]; return ok && v != nil }

func (c cfgMap) num(key string) (float64, bool, error) {
	v, ok := c.m[key]
	if !ok || v == nil {
		return 0, false, nil
	}
	switch x := v.(type) {
	case json.Number:
		f, err := x.Float64()
		if err != nil {
			return 0, false, fmt.Errorf("%s: %q: %v", c.file, key, err)
		}
		return f, true, nil
	case []any: // eos_token_id may be a list; the first is the canonical one
		if len(x) > 0 {
			if n, ok := x[0].(json.Number); ok {
				f, err := n.Float64()
				return f, err == nil, err
			}
		}
	}
	return 0, false, fmt.Errorf("%s: %q is %v, want a number", c.file, key, v)
}

// int returns a non-negative integer key or def when absent.
// intsInto returns a reader of integer keys that records the first error in
// *err and returns 0 from then on, so a family can read a run of sizes and
// check once.
func (c cfgMap) intsInto(err *error) func(key string, def int) int {
	return func(key string, def int) int {
		if *err != nil {
			return 0
		}
		var v int
		v, *err = c.int(key, def)
		return v
	}
}

func (c cfgMap) int(key string, def int) (int, error) {
	f, ok, err := c.num(key)
	if err != nil || !ok {
		return def, err
	}
	if f < 0 || f != math.Trunc(f) || f > math.MaxInt32 {
		return 0, fmt.Errorf("%s: %q = %v, want a non-negative integer", c.file, key, f)
	}
	return int(f), nil
}

func (c cfgMap) float(key string, def float64) (float64, error) {
	f, ok, err := c.num(key)
	if err != nil || !ok {
		return def, err
	}
	return f, nil
}

func (c cfgMap) str(key string) string {
	s, _ := c.m[key].(string)
	return s
}

func (c cfgMap) boolean(key string, def bool) (bool, error) {
	v, ok := c.m[key]
	if !ok || v == nil {
		return def, nil
	}
	b, isBool := v.(bool)
	if !isBool {
		return false, fmt.Errorf("%s: %q is %v, want true or false", c.file, key, v)
	}
	return b, nil
}

func (c cfgMap) strings(key string) ([]string, error) {
	v, ok := c.m[key]
	if !ok || v == nil {
		return nil, nil
	}
	l, isList := v.([]any)
	if !isList {
		return nil, fmt.Errorf("%s: %q is %v, want a list of strings", c.file, key, v)
	}
	out := make([]string, len(l))
	for i, x := range l {
		s, isStr := x.(string)
		if !isStr {
			return nil, fmt.Errorf("%s: %q[%d] is %v, want a string", c.file, key, i, x)
		}
		out[i] = s
	}
	return out, nil
}

// ints reads a list of non-negative integers (nil when absent).
func (c cfgMap) ints(key string) ([]int, error) {
	v, ok := c.m[key]
	if !ok || v == nil {
		return nil, nil
	}
	l, isList := v.([]any)
	if !isList {
		return nil, fmt.Errorf("%s: %q is %v, want a list of integers", c.file, key, v)
	}
	out := make([]int, len(l))
	for i, x := range l {
		n, isNum := x.(json.Number)
		f, err := n.Float64()
		if !isNum || err != nil || f < 0 || f != math.Trunc(f) || f > math.MaxInt32 {
			return nil, fmt.Errorf("%s: %q[%d] is %v, want a non-negative integer", c.file, key, i, x)
		}
		out[i] = int(f)
	}
	return out, nil
}

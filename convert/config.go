package convert

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strings"

	"github.com/cflow-dev/cflow/archspec"
)

// This file is the decoding step: the one place a config document is read
// key by key. decodeConfig fills a family's typed config from it once;
// everything after works on that struct.

// cfgMap is a config.json document kept as decoded JSON while it is decoded:
// HF configs differ per model family and carry nulls, lists and nested
// objects, so fields are read by name with typed getters that report the
// file and key on a type mismatch.
type cfgMap struct {
	file string
	m    map[string]any
	raw  map[string]json.RawMessage // each key's bytes, for nested objects
}

func parseConfig(doc configDoc) (cfgMap, error) {
	dec := json.NewDecoder(bytes.NewReader(doc.json))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return cfgMap{}, fmt.Errorf("%s: not a JSON object: %v", doc.file, err)
	}
	if m == nil {
		return cfgMap{}, fmt.Errorf("%s: not a JSON object", doc.file)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(doc.json, &raw); err != nil {
		return cfgMap{}, fmt.Errorf("%s: not a JSON object: %v", doc.file, err)
	}
	return cfgMap{file: doc.file, m: m, raw: raw}, nil
}

// decodeFamily is the decoding step: the identity keys pick the family
// (with --model, force), whose typed config is then decoded from the
// document once. Nothing after it reads the document.
func decodeFamily(doc configDoc, force string) (*family, familyConfig, error) {
	m, err := parseConfig(doc)
	if err != nil {
		return nil, nil, err
	}
	var id configIdentity
	if err := m.decode(&id); err != nil {
		return nil, nil, err
	}
	p, err := pickFamily(m.file, id, force)
	if err != nil {
		return nil, nil, err
	}
	if p.textConfig {
		if m, err = m.lift("text_config", "tie_word_embeddings", "dtype", "torch_dtype"); err != nil {
			return nil, nil, err
		}
	}
	fc := p.newConfig()
	b := fc.base()
	*b = baseDefaults
	b.file = m.file
	if err := m.decode(fc); err != nil {
		return nil, nil, err
	}
	return p, fc, nil
}

// cfgValue is a config field with its own decoding (a value that may be a
// name or a number, a token id that may be a list).
type cfgValue interface {
	decodeCfg(c cfgMap, key string) error
}

// decode fills dst, a pointer to a config struct, from the document: every
// field tagged `json:"key"`, embedded structs included, whose key is present
// and not null (an absent or null key keeps the value dst already holds, its
// default). Integers must be non-negative whole numbers; nested objects are
// decoded with encoding/json. The first bad value is the error, naming the
// file and key.
func (c cfgMap) decode(dst any) error {
	v := reflect.ValueOf(dst)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return fmt.Errorf("internal error: decode into %T, want a pointer to a struct", dst)
	}
	return c.decodeStruct(v.Elem())
}

func (c cfgMap) decodeStruct(v reflect.Value) error {
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		f, fv := t.Field(i), v.Field(i)
		if f.Anonymous && f.Type.Kind() == reflect.Struct {
			if err := c.decodeStruct(fv); err != nil {
				return err
			}
			continue
		}
		key, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if key == "" || key == "-" || !c.present(key) {
			continue
		}
		if !fv.CanSet() {
			return fmt.Errorf("internal error: config field %s.%s (%q) is not settable", t.Name(), f.Name, key)
		}
		if err := c.decodeField(key, fv.Addr().Interface()); err != nil {
			return err
		}
	}
	return nil
}

func (c cfgMap) decodeField(key string, dst any) (err error) {
	switch p := dst.(type) {
	case cfgValue:
		return p.decodeCfg(c, key)
	case *int:
		*p, err = c.int(key, *p)
	case **int:
		var n int
		n, err = c.int(key, 0)
		*p = &n
	case *float64:
		*p, err = c.float(key, *p)
	case **float64:
		var f float64
		f, err = c.float(key, 0)
		*p = &f
	case *bool:
		*p, err = c.boolean(key, *p)
	case **bool:
		var b bool
		b, err = c.boolean(key, false)
		*p = &b
	case *string:
		*p, err = c.string(key)
	case *[]string:
		*p, err = c.strings(key)
	case *[]int:
		*p, err = c.ints(key)
	case *json.RawMessage:
		*p = c.raw[key]
	case *any:
		*p = c.m[key]
	default: // a nested object
		if err := json.Unmarshal(c.raw[key], dst); err != nil {
			return fmt.Errorf("%s: %q: %v", c.file, key, err)
		}
	}
	return err
}

// lift returns the nested object under key as a document of its own
// (a multimodal config's text_config), inheriting the keys named from the
// top level where it has none; the document itself when key is absent.
func (c cfgMap) lift(key string, inherit ...string) (cfgMap, error) {
	sub, ok := c.m[key]
	if !ok || sub == nil {
		return c, nil
	}
	m, isObj := sub.(map[string]any)
	if !isObj {
		return c, fmt.Errorf("%s: %s is %v, want an object", c.file, key, sub)
	}
	for _, k := range inherit {
		if v, has := c.m[k]; has {
			if _, own := m[k]; !own {
				m[k] = v
			}
		}
	}
	b, err := json.Marshal(m)
	if err != nil {
		return c, err
	}
	return parseConfig(configDoc{file: c.file + " " + key, json: b})
}

// tokenID is a special token id (bos_token_id, eos_token_id): a number or
// a list whose first entry is the canonical one; a value outside u32 is
// ignored, as HF's -1 "none" is.
type tokenID struct {
	id  uint32
	set bool
}

func (t *tokenID) decodeCfg(c cfgMap, key string) error {
	if l, isList := c.m[key].([]any); isList && len(l) > 0 {
		c = cfgMap{file: c.file, m: map[string]any{key: l[0]}} // the first is the canonical one
	}
	v, ok, err := c.num(key)
	if err != nil {
		return err
	}
	if ok && v >= 0 && v <= math.MaxUint32 {
		t.id, t.set = uint32(v), true
	}
	return nil
}

// ropeParameters is config "rope_parameters", the newer form of the RoPE
// settings: one object of rope_scaling's keys plus rope_theta (Llama-style
// families), or one such object per layer kind (Gemma). Both readings are
// kept; a family refuses the value (raw, as written) when the one it reads
// does not fit.
type ropeParameters struct {
	raw    string
	set    bool
	flat   *ropeScalingConfig            // nil: not one object of RoPE keys
	byKind map[string]*ropeScalingConfig // nil: not an object of objects
}

func (r *ropeParameters) decodeCfg(c cfgMap, key string) error {
	r.raw, r.set = string(c.raw[key]), true
	var flat ropeScalingConfig
	if json.Unmarshal(c.raw[key], &flat) == nil {
		r.flat = &flat
	}
	var byKind map[string]*ropeScalingConfig
	if json.Unmarshal(c.raw[key], &byKind) == nil {
		r.byKind = byKind
	}
	return nil
}

// combineValue is config "combine_style", a name or an integer.
type combineValue struct {
	style archspec.CombineStyle
	set   bool
}

func (cv *combineValue) decodeCfg(c cfgMap, key string) error {
	if s, isStr := c.m[key].(string); isStr {
		for i := 0; archspec.CombineStyle(i).Valid(); i++ {
			if strings.EqualFold(archspec.CombineStyle(i).String(), s) {
				cv.style, cv.set = archspec.CombineStyle(i), true
				return nil
			}
		}
		return fmt.Errorf("%s: unknown combine_style %q", c.file, s)
	}
	n, err := c.int(key, 0)
	if err != nil {
		return err
	}
	if !archspec.CombineStyle(n).Valid() {
		return fmt.Errorf("%s: unknown combine_style %d", c.file, n)
	}
	cv.style, cv.set = archspec.CombineStyle(n), true
	return nil
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
	}
	return 0, false, fmt.Errorf("%s: %q is %v, want a number", c.file, key, v)
}

// int returns a non-negative integer key or def when absent.
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

func (c cfgMap) string(key string) (string, error) {
	v, ok := c.m[key]
	if !ok || v == nil {
		return "", nil
	}
	s, isStr := v.(string)
	if !isStr {
		return "", fmt.Errorf("%s: %q is %v, want a string", c.file, key, v)
	}
	return s, nil
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

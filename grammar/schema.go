package grammar

import (
	"encoding/json"
	"fmt"
	"math/big"
	"strconv"
	"strings"
)

// SchemaError is a schema the compiler refuses: not JSON, not a schema,
// or a keyword it does not implement. Path is the JSON pointer of the
// offending place ("" for the root), Keyword the keyword when one is to
// blame, so a server can answer 400 naming it.
type SchemaError struct {
	Path, Keyword, Msg string
}

func (e *SchemaError) Error() string {
	at := e.Path
	if at == "" {
		at = "the root"
	}
	if e.Keyword != "" {
		return fmt.Sprintf("grammar: schema keyword %q at %s: %s", e.Keyword, at, e.Msg)
	}
	return fmt.Sprintf("grammar: schema at %s: %s", at, e.Msg)
}

// Compile turns a JSON Schema (draft 2020-12's vocabulary, the subset the
// package comment lists) into a grammar of the JSON documents it accepts.
func Compile(schema []byte) (*Grammar, error) {
	doc, err := decodeOrdered(schema)
	if err != nil {
		return nil, &SchemaError{Msg: strings.TrimPrefix(err.Error(), "grammar: ")}
	}
	c := &compiler{b: newBuilder(), root: doc, refs: map[string]int32{}}
	root, err := c.value(doc, "")
	if err != nil {
		return nil, err
	}
	g := c.finish(root)
	g.fingerprint = "schema " + string(canonical(doc))
	if g.leftCycle() >= 0 {
		return nil, &SchemaError{Keyword: "$ref", Msg: "a reference reaches itself before any value is written (left recursion is not implemented)"}
	}
	return g, nil
}

// JSONObject is the grammar of any JSON object: response_format
// {"type":"json_object"}.
func JSONObject() *Grammar {
	c := &compiler{b: newBuilder(), refs: map[string]int32{}}
	g := c.finish(c.anyObject())
	g.fingerprint = "json_object"
	return g
}

type compiler struct {
	b    *builder
	root any
	refs map[string]int32 // $ref target → its rule (made before it is filled, for recursion)
}

// finish wraps the document rule: optional trailing whitespace.
func (c *compiler) finish(root int32) *Grammar {
	doc := c.b.rule([]elem{ref(root), c.b.ws()})
	return c.b.finish(doc)
}

// Keywords that only annotate: they change nothing a validator accepts.
var annotations = map[string]bool{
	"title": true, "description": true, "default": true, "examples": true,
	"$schema": true, "$id": true, "$comment": true, "deprecated": true,
	"readOnly": true, "writeOnly": true, "$anchor": true,
}

// implemented keywords, by the type they apply to ("" for any).
var implemented = map[string]bool{
	"type": true, "enum": true, "const": true, "anyOf": true, "oneOf": true,
	"$ref": true, "$defs": true, "definitions": true,
	"properties": true, "required": true, "additionalProperties": true,
	"items": true, "minItems": true, "maxItems": true,
	"minLength": true, "maxLength": true,
	"minimum": true, "maximum": true, "exclusiveMinimum": true, "exclusiveMaximum": true,
}

var typeKeywords = map[string][]string{
	"object":  {"properties", "required", "additionalProperties"},
	"array":   {"items", "minItems", "maxItems"},
	"string":  {"minLength", "maxLength"},
	"number":  {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"},
	"integer": {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"},
}

func errAt(path, kw, format string, args ...any) error {
	return &SchemaError{Path: path, Keyword: kw, Msg: fmt.Sprintf(format, args...)}
}

// value compiles the schema s found at path to a rule.
func (c *compiler) value(s any, path string) (int32, error) {
	switch t := s.(type) {
	case bool:
		if !t {
			return 0, errAt(path, "", "false accepts no value")
		}
		return c.anyValue(), nil
	case *object:
		return c.schemaObject(t, path)
	}
	return 0, errAt(path, "", "a schema is an object or a boolean, not %s", canonical(s))
}

func (c *compiler) schemaObject(o *object, path string) (int32, error) {
	for _, k := range o.keys {
		if !implemented[k] && !annotations[k] {
			return 0, errAt(path, k, "not implemented")
		}
	}
	if r, ok := o.get("$ref"); ok {
		for _, k := range o.keys {
			if implemented[k] && k != "$ref" && k != "$defs" && k != "definitions" {
				return 0, errAt(path, k, "beside $ref is not implemented")
			}
		}
		return c.ref(r, path)
	}
	if v, ok := o.get("const"); ok {
		return c.literals([]any{v}, o, path+"/const")
	}
	if v, ok := o.get("enum"); ok {
		arr, ok := v.([]any)
		if !ok || len(arr) == 0 {
			return 0, errAt(path, "enum", "must be a non-empty array")
		}
		return c.literals(arr, o, path+"/enum")
	}
	for _, kw := range []string{"anyOf", "oneOf"} {
		v, ok := o.get(kw)
		if !ok {
			continue
		}
		for _, k := range o.keys {
			if implemented[k] && k != kw && k != "$defs" && k != "definitions" {
				return 0, errAt(path, k, "beside %s is not implemented", kw)
			}
		}
		arr, ok := v.([]any)
		if !ok || len(arr) == 0 {
			return 0, errAt(path, kw, "must be a non-empty array")
		}
		if kw == "oneOf" {
			if err := c.disjoint(arr, path+"/oneOf"); err != nil {
				return 0, err
			}
		}
		r := c.b.newRule()
		for i, alt := range arr {
			ar, err := c.value(alt, path+"/"+kw+"/"+strconv.Itoa(i))
			if err != nil {
				return 0, err
			}
			c.b.setAlts(r, []elem{ref(ar)})
		}
		return r, nil
	}
	types, err := schemaTypes(o, path)
	if err != nil {
		return 0, err
	}
	if types == nil {
		return c.anyValue(), nil
	}
	r := c.b.newRule()
	for _, ty := range types {
		tr, err := c.typed(ty, o, path)
		if err != nil {
			return 0, err
		}
		c.b.setAlts(r, []elem{ref(tr)})
	}
	return r, nil
}

// schemaTypes is the list of types the schema admits: its type keyword,
// else the type its keywords imply, else nil (any value).
func schemaTypes(o *object, path string) ([]string, error) {
	known := map[string]bool{"object": true, "array": true, "string": true, "number": true, "integer": true, "boolean": true, "null": true}
	if v, ok := o.get("type"); ok {
		var list []string
		switch t := v.(type) {
		case string:
			list = []string{t}
		case []any:
			for _, e := range t {
				s, ok := e.(string)
				if !ok {
					return nil, errAt(path, "type", "entries must be strings")
				}
				list = append(list, s)
			}
		default:
			return nil, errAt(path, "type", "must be a string or an array of strings")
		}
		if len(list) == 0 {
			return nil, errAt(path, "type", "an empty list accepts no value")
		}
		for _, s := range list {
			if !known[s] {
				return nil, errAt(path, "type", "unknown type %q", s)
			}
		}
		if containsStr(list, "number") && containsStr(list, "integer") {
			list = removeStr(list, "integer")
		}
		return list, nil
	}
	var implied []string
	for _, ty := range []string{"object", "array", "string", "number"} {
		for _, k := range typeKeywords[ty] {
			if _, ok := o.get(k); ok {
				implied = append(implied, ty)
				break
			}
		}
	}
	if len(implied) > 1 {
		return nil, errAt(path, "", "keywords of several types without \"type\" are not implemented")
	}
	return implied, nil
}

func containsStr(l []string, s string) bool {
	for _, e := range l {
		if e == s {
			return true
		}
	}
	return false
}

func removeStr(l []string, s string) []string {
	var out []string
	for _, e := range l {
		if e != s {
			out = append(out, e)
		}
	}
	return out
}

// typed compiles schema o restricted to one JSON type.
func (c *compiler) typed(ty string, o *object, path string) (int32, error) {
	b := c.b
	switch ty {
	case "null":
		return b.rule([]elem{b.lit("null")}), nil
	case "boolean":
		return b.rule([]elem{b.lit("true")}, []elem{b.lit("false")}), nil
	case "string":
		spec := stringSpec{maxLen: -1}
		var err error
		if spec.minLen, err = count(o, "minLength", 0, path); err != nil {
			return 0, err
		}
		if spec.maxLen, err = count(o, "maxLength", -1, path); err != nil {
			return 0, err
		}
		if spec.maxLen >= 0 && spec.maxLen < spec.minLen {
			return 0, errAt(path, "maxLength", "is below minLength: no string fits")
		}
		t := b.term(&terminal{kind: termString, str: spec})
		return b.rule([]elem{{term: t, rule: -1}}), nil
	case "integer", "number":
		spec := numberSpec{integer: ty == "integer"}
		var err error
		if spec.lo, spec.loExc, err = bound(o, "minimum", "exclusiveMinimum", true, path); err != nil {
			return 0, err
		}
		if spec.hi, spec.hiExc, err = bound(o, "maximum", "exclusiveMaximum", false, path); err != nil {
			return 0, err
		}
		t := b.term(&terminal{kind: termNumber, num: spec})
		if !spec.reachable(t.parseNum("")) {
			return 0, errAt(path, "", "no %s within the bounds can be written (at most %d integer digits)", ty, maxIntDigits)
		}
		return b.rule([]elem{{term: t, rule: -1}}), nil
	case "array":
		return c.array(o, path)
	default:
		return c.object(o, path)
	}
}

// count reads a non-negative integer keyword (def when absent).
func count(o *object, kw string, def int, path string) (int, error) {
	v, ok := o.get(kw)
	if !ok {
		return def, nil
	}
	n, ok := v.(json.Number)
	if !ok {
		return 0, errAt(path, kw, "must be a non-negative integer")
	}
	i, err := strconv.Atoi(n.String())
	if err != nil || i < 0 || i > 100000 {
		return 0, errAt(path, kw, "must be an integer in 0…100000, not %s", n)
	}
	return i, nil
}

// bound reads minimum/exclusiveMinimum (or the maximum pair): the tighter
// of the two when both are given.
func bound(o *object, inc, exc string, lower bool, path string) (*big.Rat, bool, error) {
	var val *big.Rat
	excl := false
	for _, kw := range []string{inc, exc} {
		v, ok := o.get(kw)
		if !ok {
			continue
		}
		n, ok := v.(json.Number)
		if !ok {
			return nil, false, errAt(path, kw, "must be a number (draft 4's boolean form is not implemented)")
		}
		if !modestExponent(n.String()) {
			return nil, false, errAt(path, kw, "exponent out of range: %s", n)
		}
		r, ok := new(big.Rat).SetString(n.String())
		if !ok {
			return nil, false, errAt(path, kw, "is not a number: %s", n)
		}
		isExc := kw == exc
		if val == nil {
			val, excl = r, isExc
			continue
		}
		cmp := r.Cmp(val)
		if !lower {
			cmp = -cmp
		}
		if cmp > 0 || cmp == 0 && isExc {
			val, excl = r, isExc
		}
	}
	return val, excl, nil
}

// modestExponent keeps a bound's exponent within float64's range, so
// exact arithmetic on it stays small (1e100000000 would be a huge integer).
func modestExponent(s string) bool {
	i := strings.IndexAny(s, "eE")
	if i < 0 {
		return len(s) <= 400
	}
	e, err := strconv.Atoi(strings.TrimPrefix(s[i+1:], "+"))
	return err == nil && e >= -400 && e <= 400 && i <= 400
}

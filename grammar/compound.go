package grammar

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// object compiles an object schema: declared properties in order (the
// required ones always, the optional ones maybe), then additional keys
// where additionalProperties allows them.
func (c *compiler) object(o *object, path string) (int32, error) {
	b := c.b
	propsV, hasProps := o.get("properties")
	addV, hasAdd := o.get("additionalProperties")
	if !hasProps && (!hasAdd || addV == true) {
		if _, ok := o.get("required"); !ok {
			return c.anyObject(), nil
		}
	}
	props := &object{vals: map[string]any{}}
	if hasProps {
		p, ok := propsV.(*object)
		if !ok {
			return 0, errAt(path, "properties", "must be an object")
		}
		props = p
	}
	required := map[string]bool{}
	if v, ok := o.get("required"); ok {
		arr, ok := v.([]any)
		if !ok {
			return 0, errAt(path, "required", "must be an array of strings")
		}
		for _, e := range arr {
			name, ok := e.(string)
			if !ok {
				return 0, errAt(path, "required", "must be an array of strings")
			}
			if _, declared := props.get(name); !declared {
				return 0, errAt(path, "required", "names %q, which is not in properties (not implemented)", name)
			}
			required[name] = true
		}
	}
	// The additional key-value rule, or -1 when no other key may appear.
	addKV := int32(-1)
	if hasAdd && addV != false {
		val, err := c.value(addV, path+"/additionalProperties")
		if err != nil {
			return 0, err
		}
		exclude := map[string]bool{}
		for _, k := range props.keys {
			exclude[k] = true
		}
		key := b.term(&terminal{kind: termString, str: stringSpec{maxLen: -1, exclude: exclude}})
		addKV = b.rule([]elem{{term: key, rule: -1}, b.ws(), b.lit(":"), b.ws(), ref(val), b.ws()})
	}
	kvs := make([]int32, len(props.keys))
	for i, name := range props.keys {
		val, err := c.value(props.vals[name], path+"/properties/"+escapePointer(name))
		if err != nil {
			return 0, err
		}
		kj, _ := json.Marshal(name)
		kvs[i] = b.rule([]elem{b.lit(string(kj)), b.ws(), b.lit(":"), b.ws(), ref(val), b.ws()})
	}
	comma := []elem{b.lit(","), b.ws()}
	// tail[first]: the additional pairs after the declared ones.
	var tail [2]int32
	for first := 0; first < 2; first++ {
		t := b.newRule()
		tail[first] = t
		if addKV < 0 {
			b.setAlts(t, nil)
			continue
		}
		rep := b.newRule() // ("," ws kv)*
		b.setAlts(rep, append(append([]elem{}, comma...), ref(addKV), ref(rep)), nil)
		if first == 1 {
			b.setAlts(t, []elem{ref(addKV), ref(rep)}, nil)
		} else {
			b.setAlts(t, []elem{ref(rep)})
		}
	}
	// next[i][first]: properties i… given whether a pair came before.
	next := tail
	for i := len(props.keys) - 1; i >= 0; i-- {
		var cur [2]int32
		for first := 0; first < 2; first++ {
			var with []elem
			if first == 0 {
				with = append(with, comma...)
			}
			with = append(with, ref(kvs[i]), ref(next[0]))
			r := b.newRule()
			if required[props.keys[i]] {
				b.setAlts(r, with)
			} else {
				b.setAlts(r, with, []elem{ref(next[first])})
			}
			cur[first] = r
		}
		next = cur
	}
	return b.rule([]elem{b.lit("{"), b.ws(), ref(next[1]), b.lit("}")}), nil
}

func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// array compiles items with minItems/maxItems: one rule per count below
// the bound that matters, a loop past it.
func (c *compiler) array(o *object, path string) (int32, error) {
	b := c.b
	minN, err := count(o, "minItems", 0, path)
	if err != nil {
		return 0, err
	}
	maxN, err := count(o, "maxItems", -1, path)
	if err != nil {
		return 0, err
	}
	if maxN >= 0 && maxN < minN {
		return 0, errAt(path, "maxItems", "is below minItems: no array fits")
	}
	var item int32 = -1
	if v, ok := o.get("items"); ok {
		if v == false {
			if minN > 0 {
				return 0, errAt(path, "items", "false with minItems %d: no array fits", minN)
			}
			maxN = 0
		} else if _, isArr := v.([]any); isArr {
			return 0, errAt(path, "items", "as an array (draft 4's tuple form) is not implemented")
		} else if item, err = c.value(v, path+"/items"); err != nil {
			return 0, err
		}
	} else {
		item = c.anyValue()
	}
	var body int32
	if maxN == 0 {
		body = b.rule(nil)
	} else {
		itemWS := b.rule([]elem{ref(item), b.ws()})
		comma := []elem{b.lit(","), b.ws(), ref(itemWS)}
		// rest(k): what may follow the k-th item.
		var rest func(k int) int32
		loop := int32(-1)
		rest = func(k int) int32 {
			switch {
			case maxN >= 0 && k == maxN:
				return b.rule(nil)
			case k < minN:
				return b.rule(append(append([]elem{}, comma...), ref(rest(k+1))))
			case maxN < 0:
				if loop < 0 {
					loop = b.newRule()
					b.setAlts(loop, append(append([]elem{}, comma...), ref(loop)), nil)
				}
				return loop
			default:
				return b.rule(append(append([]elem{}, comma...), ref(rest(k+1))), nil)
			}
		}
		first := []elem{ref(itemWS), ref(rest(1))}
		if minN == 0 {
			body = b.rule(first, nil)
		} else {
			body = b.rule(first)
		}
	}
	return b.rule([]elem{b.lit("["), b.ws(), ref(body), b.lit("]")}), nil
}

// literals compiles const/enum: each value as its compact JSON text. The
// schema's other value keywords (besides type) would have to hold for the
// values too; that is not implemented.
func (c *compiler) literals(vals []any, o *object, path string) (int32, error) {
	for _, k := range o.keys {
		if implemented[k] && k != "enum" && k != "const" && k != "type" && k != "$defs" && k != "definitions" {
			return 0, errAt(strings.TrimSuffix(strings.TrimSuffix(path, "/enum"), "/const"), k, "beside enum/const is not implemented")
		}
	}
	types, err := schemaTypes(o, path)
	if err != nil {
		return 0, err
	}
	r := c.b.newRule()
	n := 0
	seen := map[string]bool{}
	for _, v := range vals {
		if types != nil && !typeAdmits(types, v) {
			continue
		}
		text := canonical(v)
		if seen[string(text)] {
			continue
		}
		seen[string(text)] = true
		c.b.setAlts(r, []elem{c.b.lit(string(text))})
		n++
	}
	if n == 0 {
		return 0, errAt(path, "", "no value is of the schema's type")
	}
	return r, nil
}

// jsonType is the JSON Schema type of a decoded value ("integer" for whole
// numbers, which "number" admits too).
func jsonType(v any) string {
	switch t := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case []any:
		return "array"
	case *object:
		return "object"
	case json.Number:
		if _, err := strconv.ParseInt(t.String(), 10, 64); err == nil {
			return "integer"
		}
		return "number"
	}
	return fmt.Sprintf("%T", v)
}

func typeAdmits(types []string, v any) bool {
	jt := jsonType(v)
	for _, t := range types {
		if t == jt || t == "number" && jt == "integer" {
			return true
		}
	}
	return false
}

// ref resolves a local $ref ("#", "#/$defs/x", any JSON pointer into this
// document) to a rule, made once per target so recursion terminates.
func (c *compiler) ref(v any, path string) (int32, error) {
	s, ok := v.(string)
	if !ok || !strings.HasPrefix(s, "#") {
		return 0, errAt(path, "$ref", "only local references (#/…) are implemented, not %s", canonical(v))
	}
	if r, ok := c.refs[s]; ok {
		return r, nil
	}
	target, err := c.resolve(s, path)
	if err != nil {
		return 0, err
	}
	r := c.b.newRule()
	c.refs[s] = r
	inner, err := c.value(target, strings.TrimPrefix(s, "#"))
	if err != nil {
		return 0, err
	}
	c.b.setAlts(r, []elem{ref(inner)})
	return r, nil
}

// resolve follows a JSON pointer fragment from the document's root.
func (c *compiler) resolve(s, path string) (any, error) {
	cur := c.root
	ptr := strings.TrimPrefix(s, "#")
	if ptr == "" {
		return cur, nil
	}
	if !strings.HasPrefix(ptr, "/") {
		return nil, errAt(path, "$ref", "anchors (%s) are not implemented", s)
	}
	for _, part := range strings.Split(ptr[1:], "/") {
		part = strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")
		switch t := cur.(type) {
		case *object:
			v, ok := t.get(part)
			if !ok {
				return nil, errAt(path, "$ref", "%s does not resolve", s)
			}
			cur = v
		case []any:
			i, err := strconv.Atoi(part)
			if err != nil || i < 0 || i >= len(t) {
				return nil, errAt(path, "$ref", "%s does not resolve", s)
			}
			cur = t[i]
		default:
			return nil, errAt(path, "$ref", "%s does not resolve", s)
		}
	}
	return cur, nil
}

// anyValue is the rule of any JSON value.
func (c *compiler) anyValue() int32 {
	b := c.b
	if b.anyVal >= 0 {
		return b.anyVal
	}
	v := b.newRule()
	b.anyVal = v
	obj := c.anyObject()
	arr := b.newRule()
	itemWS := b.rule([]elem{ref(v), b.ws()})
	loop := b.newRule()
	b.setAlts(loop, []elem{b.lit(","), b.ws(), ref(itemWS), ref(loop)}, nil)
	body := b.rule([]elem{ref(itemWS), ref(loop)}, nil)
	b.setAlts(arr, []elem{b.lit("["), b.ws(), ref(body), b.lit("]")})
	str := b.term(&terminal{kind: termString, str: stringSpec{maxLen: -1}})
	num := b.term(&terminal{kind: termNumber})
	b.setAlts(v, []elem{ref(obj)}, []elem{ref(arr)}, []elem{{term: str, rule: -1}}, []elem{{term: num, rule: -1}},
		[]elem{b.lit("true")}, []elem{b.lit("false")}, []elem{b.lit("null")})
	return v
}

// anyObject is the rule of any JSON object (keys may repeat, as JSON allows).
func (c *compiler) anyObject() int32 {
	b := c.b
	obj := b.newRule()
	val := c.anyValue
	key := b.term(&terminal{kind: termString, str: stringSpec{maxLen: -1}})
	kv := b.newRule()
	loop := b.newRule()
	body := b.rule([]elem{ref(kv), ref(loop)}, nil)
	b.setAlts(obj, []elem{b.lit("{"), b.ws(), ref(body), b.lit("}")})
	b.setAlts(kv, []elem{{term: key, rule: -1}, b.ws(), b.lit(":"), b.ws(), ref(val()), b.ws()})
	b.setAlts(loop, []elem{b.lit(","), b.ws(), ref(kv), ref(loop)}, nil)
	return obj
}

// disjoint refuses a oneOf whose alternatives could accept the same value:
// it passes when their JSON types differ pairwise, or when all are objects
// with one required property whose const/enum values differ pairwise.
func (c *compiler) disjoint(alts []any, path string) error {
	sets := make([]map[string]bool, len(alts))
	for i, a := range alts {
		sets[i] = c.typesOf(a, 0)
	}
	ok := true
	for i := range sets {
		for j := i + 1; j < len(sets); j++ {
			for t := range sets[i] {
				if sets[j][t] || t == "number" && sets[j]["integer"] || t == "integer" && sets[j]["number"] {
					ok = false
				}
			}
		}
	}
	if ok || c.discriminated(alts) {
		return nil
	}
	return errAt(path, "oneOf", "alternatives that may accept the same value are not implemented (use anyOf, or tell them apart by type or by a required const property)")
}

// typesOf is the set of JSON types schema s can accept ("any" for all).
func (c *compiler) typesOf(s any, depth int) map[string]bool {
	all := map[string]bool{"object": true, "array": true, "string": true, "number": true, "boolean": true, "null": true}
	o, ok := s.(*object)
	if !ok || depth > 32 {
		return all
	}
	if r, ok := o.get("$ref"); ok {
		if rs, ok := r.(string); ok {
			if t, err := c.resolve(rs, ""); err == nil {
				return c.typesOf(t, depth+1)
			}
		}
		return all
	}
	var lits []any
	if v, ok := o.get("const"); ok {
		lits = []any{v}
	} else if v, ok := o.get("enum"); ok {
		lits, _ = v.([]any)
	}
	if lits != nil {
		out := map[string]bool{}
		for _, l := range lits {
			out[jsonType(l)] = true
		}
		return out
	}
	for _, kw := range []string{"anyOf", "oneOf"} {
		if v, ok := o.get(kw); ok {
			out := map[string]bool{}
			arr, _ := v.([]any)
			for _, a := range arr {
				for t := range c.typesOf(a, depth+1) {
					out[t] = true
				}
			}
			return out
		}
	}
	types, err := schemaTypes(o, "")
	if err != nil || types == nil {
		return all
	}
	out := map[string]bool{}
	for _, t := range types {
		out[t] = true
	}
	return out
}

// discriminated says whether every alternative is an object schema that
// requires one same property holding const/enum values no other
// alternative's takes.
func (c *compiler) discriminated(alts []any) bool {
	objs := make([]*object, len(alts))
	for i, a := range alts {
		o, ok := a.(*object)
		for ok {
			r, isRef := o.get("$ref")
			if !isRef {
				break
			}
			rs, _ := r.(string)
			t, err := c.resolve(rs, "")
			if err != nil {
				return false
			}
			o, ok = t.(*object)
		}
		if !ok {
			return false
		}
		objs[i] = o
	}
	props, ok := objs[0].get("properties")
	if !ok {
		return false
	}
	po, ok := props.(*object)
	if !ok {
		return false
	}
	for _, name := range po.keys {
		var seen [][]byte
		good := true
		for _, o := range objs {
			vals := requiredLiterals(o, name)
			if vals == nil {
				good = false
				break
			}
			for _, v := range vals {
				for _, s := range seen {
					if bytes.Equal(s, v) {
						good = false
					}
				}
			}
			seen = append(seen, vals...)
		}
		if good {
			return true
		}
	}
	return false
}

// requiredLiterals is the canonical text of the const/enum values of the
// required property name of o, nil if it has none.
func requiredLiterals(o *object, name string) [][]byte {
	req, _ := o.get("required")
	arr, _ := req.([]any)
	isReq := false
	for _, r := range arr {
		if r == name {
			isReq = true
		}
	}
	props, _ := o.get("properties")
	po, _ := props.(*object)
	if !isReq || po == nil {
		return nil
	}
	p, _ := po.get(name)
	ps, _ := p.(*object)
	if ps == nil {
		return nil
	}
	var lits []any
	if v, ok := ps.get("const"); ok {
		lits = []any{v}
	} else if v, ok := ps.get("enum"); ok {
		lits, _ = v.([]any)
	}
	if len(lits) == 0 {
		return nil
	}
	var out [][]byte
	for _, l := range lits {
		out = append(out, canonical(l))
	}
	return out
}

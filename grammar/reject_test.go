package grammar

import (
	"errors"
	"fmt"
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"
)

// accepts says whether the grammar takes text as a whole document.
func accepts(g *Grammar, text string) bool {
	s, ok := g.Start().AcceptBytes([]byte(text))
	return ok && s.Complete()
}

// TestRejects: documents the validator refuses must be refused (as a
// prefix or as incomplete); the documents it accepts that follow the
// package's whitespace and order policy must be taken.
func TestRejects(t *testing.T) {
	// policy: valid documents the grammar does not generate (see the
	// package comment): an escaped surrogate, an exponent under bounds, a
	// repeated key spelled with an escape.
	cases := map[string]struct{ good, bad, policy []string }{
		"person": {
			good: []string{`{"name":"a","age":0}`, `{"name": "Zoë", "age": 150, "email": ""}`, "{\n  \"name\": \"x\",\n  \"age\": 7\n}"},
			bad: []string{`{"name":"","age":1}`, `{"name":"a","age":151}`, `{"name":"a","age":-1}`, `{"name":"a"}`,
				`{"name":"a","age":1,"x":1}`, `{"name":"a","age":1.5}`, `{"name":"aaaaaaaaaaaaaaaaaaaaa","age":1}`,
				`{"name":"a","age":1,}`, `{"name":"a","age":01}`, "{\"name\":\"\x01\",\"age\":1}",
				`{"name":"a","age":1}x`, `["name"]`},
			policy: []string{`{"name":"\ud800","age":1}`, `{"age":1,"name":"a"}`},
		},
		"enum_const": {
			good: []string{`{"status":"active","version":"v1"}`, `{"status":null,"version":"v1"}`, `{"status":{"a":[1,"é"]},"version":"v1"}`},
			bad:  []string{`{"status":"Active","version":"v1"}`, `{"status":"active","version":"v2"}`, `{"status":4,"version":"v1"}`},
		},
		"bounded_numbers": {
			good:   []string{`[-1.5,2.2499]`, `[0,0,0,0,0]`, `[1.25, -0.5]`},
			bad:    []string{`[2.25,0]`, `[-1.51,0]`, `[0]`, `[0,0,0,0,0,0]`, `[3,0]`},
			policy: []string{`[1e0,1]`},
		},
		"type_list": {
			good: []string{`null`, `"abcd"`, `-9`, `10`},
			bad:  []string{`"abcde"`, `-10`, `11`, `true`, `1.5`},
		},
		"one_of": {
			good: []string{`{"kind":"circle","r":0}`, `{"kind":"rect","w":1,"h":99}`},
			bad:  []string{`{"kind":"rect","w":0,"h":1}`, `{"kind":"rect","w":1,"h":0}`, `{"kind":"circle","r":-1}`, `{"kind":"square","r":1}`},
		},
		"ref_tree": {
			good: []string{`{"value":1,"children":[{"value":2},{"value":3,"children":[]}]}`},
			bad:  []string{`{"value":1,"children":[{"value":2},{"value":3},{"value":4}]}`, `{"value":1,"children":[{}]}`},
		},
		"additional": {
			good:   []string{`{"id":1,"tag":"abc","other":"12345"}`, `{"id":1,"x":"","y":"y"}`},
			bad:    []string{`{"id":1,"other":"123456"}`, `{"id":1,"o":3}`, `{"id":1,"id":"x"}`, `{"id":1,"tag":"abcd"}`, `{"id":1,"\u0069d":"x"}`},
			policy: []string{`{"tag":"a","id":1}`},
		},
		"tool_call": {
			good: []string{`{"name":"search","arguments":{"city":"Oslo","days":14}}`},
			bad:  []string{`{"name":"other","arguments":{"city":"Oslo"}}`, `{"name":"search","arguments":{"city":"Oslo","days":15}}`, `{"name":"search","arguments":{}}`},
		},
	}
	for _, tc := range testSchemas {
		c, ok := cases[tc.name]
		if !ok {
			continue
		}
		g, err := Compile([]byte(tc.schema))
		if err != nil {
			t.Fatal(err)
		}
		sch := validator(t, tc.schema)
		for _, doc := range c.good {
			if err := validates(sch, []byte(doc)); err != nil {
				t.Fatalf("%s: test document %s is not valid: %v", tc.name, doc, err)
			}
			if !accepts(g, doc) {
				t.Errorf("%s: refuses valid %s", tc.name, doc)
			}
		}
		for _, doc := range c.bad {
			if validates(sch, []byte(doc)) == nil {
				t.Fatalf("%s: test document %s is valid", tc.name, doc)
			}
			if accepts(g, doc) {
				t.Errorf("%s: takes invalid %s", tc.name, doc)
			}
		}
		for _, doc := range c.policy {
			if err := validates(sch, []byte(doc)); err != nil {
				t.Fatalf("%s: policy document %s is not valid: %v", tc.name, doc, err)
			}
			if accepts(g, doc) {
				t.Errorf("%s: takes %s, outside the generation policy", tc.name, doc)
			}
		}
	}
}

// TestUnimplementedKeywords: a keyword that changes what is valid and is
// not implemented is an error naming it.
func TestUnimplementedKeywords(t *testing.T) {
	for kw, schema := range map[string]string{
		"pattern":               `{"type":"string","pattern":"^a"}`,
		"format":                `{"type":"object","properties":{"d":{"type":"string","format":"date"}}}`,
		"allOf":                 `{"allOf":[{"type":"string"}]}`,
		"not":                   `{"not":{"type":"string"}}`,
		"uniqueItems":           `{"type":"array","uniqueItems":true}`,
		"multipleOf":            `{"type":"integer","multipleOf":2}`,
		"prefixItems":           `{"type":"array","prefixItems":[{"type":"string"}]}`,
		"patternProperties":     `{"type":"object","patternProperties":{"a":{}}}`,
		"minProperties":         `{"type":"object","minProperties":1}`,
		"oneOf":                 `{"oneOf":[{"type":"integer"},{"type":"number"}]}`,
		"if":                    `{"if":{"type":"string"},"then":{"maxLength":2}}`,
		"$ref":                  `{"$ref":"https://example.com/s.json"}`,
		"exclusiveMinimum":      `{"type":"number","exclusiveMinimum":true}`,
		"dependentRequired":     `{"type":"object","dependentRequired":{"a":["b"]}}`,
		"unevaluatedProperties": `{"type":"object","unevaluatedProperties":false}`,
	} {
		kw = strings.TrimSpace(kw) // map keys padded to name a keyword twice
		_, err := Compile([]byte(schema))
		var se *SchemaError
		if !errors.As(err, &se) || se.Keyword != kw || !strings.Contains(err.Error(), `"`+kw+`"`) {
			t.Errorf("%s: got %v, want an error naming %q", schema, err, kw)
		}
	}
	for _, schema := range []string{`false`, `{"type":"string","minLength":3,"maxLength":2}`, `{"type":"integer","minimum":2,"maximum":1}`,
		`{"type":"number","exclusiveMinimum":1,"exclusiveMaximum":1}`, `[`, `{"type":"object","required":["a"],"properties":{}}`, `{"enum":[]}`, `{"type":"what"}`} {
		if _, err := Compile([]byte(schema)); err == nil {
			t.Errorf("%s: compiled", schema)
		}
	}
}

// TestNumberBounds checks bounded integers and numbers exhaustively over
// short texts against exact arithmetic (math/big) and the JSON syntax.
func TestNumberBounds(t *testing.T) {
	type bcase struct {
		schema string
		ok     func(r *big.Rat, isInt bool) bool
	}
	rat := func(s string) *big.Rat { r, _ := new(big.Rat).SetString(s); return r }
	cases := []bcase{
		{`{"type":"integer","minimum":-13,"maximum":27}`, func(r *big.Rat, isInt bool) bool {
			return isInt && r.Cmp(rat("-13")) >= 0 && r.Cmp(rat("27")) <= 0
		}},
		{`{"type":"integer","exclusiveMinimum":5,"exclusiveMaximum":9}`, func(r *big.Rat, isInt bool) bool {
			return isInt && r.Cmp(rat("5")) > 0 && r.Cmp(rat("9")) < 0
		}},
		{`{"type":"number","minimum":-0.5,"exclusiveMaximum":1.25}`, func(r *big.Rat, _ bool) bool {
			return r.Cmp(rat("-0.5")) >= 0 && r.Cmp(rat("1.25")) < 0
		}},
		{`{"type":"number","exclusiveMinimum":0.1,"maximum":0.3}`, func(r *big.Rat, _ bool) bool {
			return r.Cmp(rat("0.1")) > 0 && r.Cmp(rat("0.3")) <= 0
		}},
	}
	alphabet := "-0123456789."
	for _, c := range cases {
		g, err := Compile([]byte(c.schema))
		if err != nil {
			t.Fatal(err)
		}
		var texts []string
		var gen func(p string, n int)
		gen = func(p string, n int) {
			if p != "" {
				texts = append(texts, p)
			}
			if n == 0 {
				return
			}
			for _, ch := range alphabet {
				gen(p+string(ch), n-1)
			}
		}
		gen("", 4)
		for _, text := range texts {
			want := false
			if jsonNumber(text) {
				r := rat(text)
				want = c.ok(r, !strings.Contains(text, "."))
			}
			if got := accepts(g, text); got != want {
				t.Errorf("%s: %q: accepted %v, want %v", c.schema, text, got, want)
			}
		}
	}
}

// jsonNumber is RFC 8259's number syntax without exponent.
func jsonNumber(s string) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	j := i
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i == j || s[j] == '0' && i-j > 1 {
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		k := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == k {
			return false
		}
	}
	return i == len(s)
}

// TestMaskMatchesBruteForce holds the trie walk (its pruning, the
// whole-subtree shortcut inside strings, the cache) to the plain
// definition: a token is allowed iff its bytes are accepted one by one,
// an end-of-sequence token iff the document is complete.
func TestMaskMatchesBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	alpha := []byte(`{}[]":, 0123456789.-eE+abcdefnrstuléü` + "\n\t\\\xe2\x82\xac")
	var toks [][]byte
	seen := map[string]bool{}
	for len(toks) < 3000 {
		n := 1 + rng.IntN(5)
		b := make([]byte, n)
		for i := range b {
			b[i] = alpha[rng.IntN(len(alpha))]
		}
		if !seen[string(b)] {
			seen[string(b)] = true
			toks = append(toks, b)
		}
	}
	for _, w := range []string{`"`, `",`, `":`, `"}`, `true`, `null`, `"active"`, "\xe2", "\x82\xac", `"name"`} {
		if !seen[w] {
			toks = append(toks, []byte(w))
		}
	}
	toks = append(toks, nil) // the end-of-sequence id
	eos := len(toks) - 1
	v, err := NewVocab(toks, []int{eos})
	if err != nil {
		t.Fatal(err)
	}
	mask := make([]uint64, v.MaskWords())
	for i, tc := range testSchemas {
		g, err := Compile([]byte(tc.schema))
		if err != nil {
			t.Fatal(err)
		}
		g2, err := Compile([]byte(tc.schema))
		if err != nil {
			t.Fatal(err)
		}
		// States along random walks of the byte vocabulary.
		bv := byteVocab(t)
		wr := rand.New(rand.NewPCG(uint64(i), 3))
		for walk := 0; walk < 3; walk++ {
			doc := randomWalk(t, g, bv, wr, 20000)
			for cut := 0; cut <= len(doc); cut += 1 + len(doc)/25 {
				s1, ok1 := g.Start().AcceptBytes(doc[:cut])
				s2, ok2 := g2.Start().AcceptBytes(doc[:cut])
				if !ok1 || !ok2 {
					t.Fatalf("%s: prefix %q of a walk refused", tc.name, doc[:cut])
				}
				// The second time comes from the cache, filled by another
				// compilation of the same schema.
				for _, s := range []*State{s1, s2} {
					if _, err := s.Allowed(v, mask); err != nil {
						t.Fatal(err)
					}
					for id, tok := range toks {
						got := mask[id/64]>>(id%64)&1 == 1
						var want bool
						if id == eos {
							want = s.Complete()
						} else {
							_, want = s.AcceptBytes(tok)
						}
						if got != want {
							t.Fatalf("%s: after %q token %q: mask %v, bytes %v", tc.name, doc[:cut], tok, got, want)
						}
					}
				}
			}
		}
	}
	_ = fmt.Sprint()
}

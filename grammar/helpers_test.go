package grammar

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// validator compiles schema with santhosh-tekuri/jsonschema (draft
// 2020-12), the independent judge of every generated document.
func validator(t testing.TB, schema string) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(schema))
	if err != nil {
		t.Fatalf("schema: %v", err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("mem://schema.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("mem://schema.json")
	if err != nil {
		t.Fatalf("validator refuses the schema: %v", err)
	}
	return s
}

// validates says whether text is JSON that sch accepts.
func validates(sch *jsonschema.Schema, text []byte) error {
	if !json.Valid(text) {
		return errString("not JSON")
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(text))
	if err != nil {
		return err
	}
	return sch.Validate(inst)
}

type errString string

func (e errString) Error() string { return string(e) }

// byteVocab is one token per byte value and an end-of-sequence token 256.
func byteVocab(t testing.TB) *Vocab {
	toks := make([][]byte, 257)
	for i := 0; i < 256; i++ {
		toks[i] = []byte{byte(i)}
	}
	v, err := NewVocab(toks, []int{256})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// randomWalk samples uniformly among the allowed tokens until an
// end-of-sequence token, returning the document's bytes.
func randomWalk(t testing.TB, g *Grammar, v *Vocab, rng *rand.Rand, maxSteps int) []byte {
	t.Helper()
	s := g.Start()
	mask := make([]uint64, v.MaskWords())
	var out []byte
	var allowed []int
	for step := 0; step < maxSteps; step++ {
		n, err := s.Allowed(v, mask)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			t.Fatalf("no token allowed after %q", out)
		}
		allowed = allowed[:0]
		for w, bitsw := range mask {
			for bitsw != 0 {
				b := bitsw & -bitsw
				allowed = append(allowed, w*64+trailingZeros(b))
				bitsw &^= b
			}
		}
		tok := allowed[rng.IntN(len(allowed))]
		next, err := s.Accept(v, tok)
		if err != nil {
			t.Fatalf("after %q: allowed token %d refused: %v", out, tok, err)
		}
		s = next
		if s.Done() {
			return out
		}
		out = append(out, v.tokens[tok]...)
	}
	t.Fatalf("no end after %d tokens: %q", maxSteps, out)
	return nil
}

func trailingZeros(b uint64) int {
	n := 0
	for b&1 == 0 {
		b >>= 1
		n++
	}
	return n
}

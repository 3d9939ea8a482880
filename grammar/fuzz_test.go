package grammar

import "testing"

// FuzzCompile: any input either compiles or is an error; a compiled
// grammar survives its start, any bytes, a mask and Complete without a
// panic or a hang.
func FuzzCompile(f *testing.F) {
	for _, tc := range testSchemas {
		f.Add([]byte(tc.schema), []byte(`{"a": [1, "x"]}`))
	}
	f.Add([]byte(`{"type":"number","minimum":1e100000000}`), []byte(`1`))
	f.Add([]byte(`{"items":{"$ref":"#"}}`), []byte(`[[[]]]`))
	toks := [][]byte{[]byte(`{`), []byte(`"`), []byte(`a`), []byte(`1`), []byte(`]`), []byte(` `), nil}
	v, err := NewVocab(toks, []int{len(toks) - 1})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, schema, input []byte) {
		g, err := Compile(schema)
		if err != nil {
			return
		}
		s := g.Start()
		mask := make([]uint64, v.MaskWords())
		for _, c := range input {
			if _, err := s.Allowed(v, mask); err != nil {
				t.Fatal(err)
			}
			next, ok := s.AcceptByte(c)
			if !ok {
				break
			}
			s = next
			s.Complete()
		}
	})
}

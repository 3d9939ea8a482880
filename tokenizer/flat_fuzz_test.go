package tokenizer

import "testing"

// FuzzOpenFlat: a corrupt tokenizer payload is an error, never a panic,
// and whatever opens encodes and decodes without panicking.
func FuzzOpenFlat(f *testing.F) {
	js := `{"model":{"type":"BPE","vocab":{"h":0,"e":1,"l":2,"o":3,"he":4,"<0x41>":5,"<s>":6},"merges":["h e"],"byte_fallback":true},
	"added_tokens":[{"id":6,"content":"<s>","special":true}],"normalizer":{"type":"Replace","pattern":{"String":" "},"content":"▁"},
	"decoder":{"type":"Sequence","decoders":[{"type":"ByteFallback"},{"type":"Fuse"}]}}`
	flat, err := Compile([]byte(js), nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(flat)
	f.Add(flat[:len(flat)/2])
	f.Fuzz(func(t *testing.T, data []byte) {
		tk, err := OpenFlat(data, -1, -1)
		if err != nil {
			return
		}
		ids, err := tk.Encode("hello <s>A")
		if err != nil {
			return
		}
		_, _ = tk.Decode(ids, false)
	})
}

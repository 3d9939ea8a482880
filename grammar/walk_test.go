package grammar

import (
	"math/rand/v2"
	"testing"
)

// testSchemas are the shapes the issue names: objects with required and
// optional properties and additionalProperties, arrays with item counts,
// strings with enum/const/length bounds, bounded integers and numbers,
// booleans, null, type lists, anyOf, oneOf, $ref/$defs with recursion.
//
// freeText marks schemas with a string of unbounded length: a uniform walk
// over a real vocabulary ends such a string only by luck (a few thousand
// of 151k tokens close it), so those walk on the byte vocabulary only.
var testSchemas = []struct {
	name, schema string
	freeText     bool
}{
	{"person", `{"type":"object","properties":{"name":{"type":"string","minLength":1,"maxLength":20},"age":{"type":"integer","minimum":0,"maximum":150},"email":{"type":"string"}},"required":["name","age"],"additionalProperties":false}`, true},
	{"enum_const", `{"type":"object","properties":{"status":{"enum":["active","inactive",null,3,{"a":[1,"é"]}]},"version":{"const":"v1"}},"required":["status","version"]}`, false},
	{"bounded_numbers", `{"type":"array","items":{"type":"number","minimum":-1.5,"exclusiveMaximum":2.25},"minItems":2,"maxItems":5}`, false},
	{"type_list", `{"type":["string","null","integer"],"maxLength":4,"exclusiveMinimum":-10,"maximum":10}`, false},
	{"any_of", `{"anyOf":[{"type":"boolean"},{"type":"array","items":{"type":"string","maxLength":2},"maxItems":3},{"type":"object","properties":{"x":{"type":"number"}},"required":["x"]}]}`, false},
	{"one_of", `{"oneOf":[{"type":"object","properties":{"kind":{"const":"circle"},"r":{"type":"number","minimum":0}},"required":["kind","r"],"additionalProperties":false},{"type":"object","properties":{"kind":{"const":"rect"},"w":{"type":"integer","minimum":1},"h":{"type":"integer","exclusiveMinimum":0,"maximum":99}},"required":["kind","w","h"],"additionalProperties":false}]}`, false},
	{"ref_tree", `{"$defs":{"node":{"type":"object","properties":{"value":{"type":"integer"},"children":{"type":"array","items":{"$ref":"#/$defs/node"},"maxItems":2}},"required":["value"],"additionalProperties":false}},"$ref":"#/$defs/node"}`, false},
	{"additional", `{"type":"object","properties":{"id":{"type":"integer"},"tag":{"type":"string","maxLength":3}},"required":["id"],"additionalProperties":{"type":"string","maxLength":5}}`, true},
	{"matrix", `{"type":"object","properties":{"matrix":{"type":"array","items":{"type":"array","items":{"type":"integer","minimum":-5,"maximum":5},"minItems":1,"maxItems":3},"maxItems":3},"flag":{"type":"boolean"},"nothing":{"type":"null"}},"required":["matrix","flag","nothing"]}`, false},
	{"tool_call", `{"type":"object","properties":{"name":{"type":"string","enum":["get_weather","search"]},"arguments":{"type":"object","properties":{"city":{"type":"string","minLength":1,"maxLength":30},"units":{"enum":["c","f"]},"days":{"type":"integer","minimum":1,"maximum":14}},"required":["city"],"additionalProperties":false}},"required":["name","arguments"],"additionalProperties":false}`, false},
	{"any_value", `{}`, true},
}

// TestRandomWalksByteVocab samples uniformly among allowed bytes until
// end of sequence; every document must be JSON the schema accepts.
func TestRandomWalksByteVocab(t *testing.T) {
	v := byteVocab(t)
	walks := 40
	if testing.Short() {
		walks = 15
	}
	for i, tc := range testSchemas {
		t.Run(tc.name, func(t *testing.T) {
			g, err := Compile([]byte(tc.schema))
			if err != nil {
				t.Fatal(err)
			}
			sch := validator(t, tc.schema)
			rng := rand.New(rand.NewPCG(uint64(i), 7))
			for w := 0; w < walks; w++ {
				doc := randomWalk(t, g, v, rng, 20000)
				if err := validates(sch, doc); err != nil {
					t.Fatalf("walk %d: %q does not validate: %v", w, doc, err)
				}
			}
		})
	}
}

// TestRandomWalksJSONObject is response_format json_object: any object.
func TestRandomWalksJSONObject(t *testing.T) {
	v := byteVocab(t)
	g := JSONObject()
	sch := validator(t, `{"type":"object"}`)
	rng := rand.New(rand.NewPCG(99, 7))
	for w := 0; w < 20; w++ {
		doc := randomWalk(t, g, v, rng, 20000)
		if err := validates(sch, doc); err != nil {
			t.Fatalf("walk %d: %q: %v", w, doc, err)
		}
	}
}

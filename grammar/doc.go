// Package grammar constrains decoding to JSON that a JSON Schema accepts.
//
// It exists so a front end (the OpenAI server's response_format, a forced
// tool call) can sample only tokens that keep the output a valid prefix of
// a schema-valid document, and stop only when the document is complete:
// every completed output validates, whatever the model's weights.
//
// Compile turns a schema into a grammar of rules over byte terminals
// (literals, bounded whitespace, JSON strings with length bounds, numbers
// with bounds). A State is an immutable set of parse threads (a pushdown
// automaton's stacks, shared as persistent lists), advanced byte by byte:
// copying or undoing is keeping the old pointer. A Vocab holds the
// vocabulary's token byte strings as a trie; State.Allowed walks the trie
// with the state, pruning a branch at its first dead byte, and caches the
// mask by the state's canonical key, since states repeat (the inside of a
// string, the slot after a comma).
//
// What the grammar generates, where JSON Schema leaves a choice:
//   - Whitespace is never leading; between structural tokens and after the
//     document it is empty, one space, or one or two newlines followed by
//     at most 20 spaces or tabs (llama.cpp's json-schema-to-grammar rule).
//   - Object properties come in the order the schema declares them; an
//     optional one may be left out. Other keys appear only where
//     additionalProperties is true or a schema (as in llama.cpp, an object
//     with properties and no additionalProperties admits no other key); an
//     object schema with neither properties nor additionalProperties admits
//     any object. An additional key never repeats a declared name.
//   - Numbers have at most 16 integer and 16 fraction digits and a two-digit
//     exponent (no exponent where bounds are given); strings are valid UTF-8
//     and never escape a surrogate.
//   - oneOf is accepted only where its alternatives cannot overlap (distinct
//     JSON types, or objects told apart by a required const/enum property),
//     so a generated value matches exactly one.
//
// A keyword that would change what is valid and that the compiler does not
// implement (pattern, format, allOf, not, uniqueItems, …) is an error naming
// it and its place in the schema, never ignored.
package grammar

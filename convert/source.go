package convert

import (
	"fmt"
	"os"
	"strings"

	"github.com/cflow-dev/cflow/tokenizer"
)

// source is what opening an input yields, whatever its kind: the one way
// in. A source kind (a safetensors directory or file, a llama2.c .bin; a
// GGUF file next) translates its own storage into these three things and
// nothing after opening knows which kind it came from:
//
//   - tensors under the Hugging Face names the families' naming tables use
//     (naming.go), each a 2-D view aliasing a file mapping; a kind whose
//     rows are stored in another order sets tensor.rowOf instead of copying;
//   - the model's config as a config.json document in Hugging Face's
//     vocabulary (keys the family's typed config decodes), which a kind
//     without one synthesizes from its own header or metadata;
//   - the tokenizer files, nil when the input carries none.
//
// Every byte of the mappings read while opening is read under
// fileio.GuardFaultIn with locate, so a file truncated meanwhile is a
// FormatError, not a crash. The caller closes the source.
type source struct {
	path      string             // what the user named, for messages
	config    configDoc          // the model's config
	tensors   map[string]*tensor // every tensor of the checkpoint by HF name
	tokenizer *tokenizer.Source  // nil when the input carries no tokenizer
	notes     []string           // what the conversion leaves out on purpose, for the user
	maps      []*mapping         // the file mappings the tensors alias, unmapped by close
	// A GGUF's architecture (source_gguf.go): its names, whether its q/k
	// rows are permuted, and the head counts and size that undo it.
	ggufArch                            ggufArch
	ggufHeads, ggufKVHeads, ggufHeadDim int
}

// configDoc is a config.json document and the name errors cite for it (a
// file, or what the document was synthesized from).
type configDoc struct {
	file string
	json []byte
}

// sourceKind recognizes and opens one kind of input. accepts looks at the
// path alone (and the file's stat, nil when it does not exist, so a kind
// may accept names that are not files); open builds the source, calling
// mapped, when not nil, with each input file once it is mapped and before
// any of it is read (a test seam: Options.onMapped).
type sourceKind struct {
	accepts func(path string, st os.FileInfo) bool
	open    func(path string, mapped func(file string)) (*source, error)
}

// sourceKinds are every input kind, tried in order; their accepts do not
// overlap. A new input kind is a file with its opener and one line here.
var sourceKinds = []sourceKind{
	{accepts: func(_ string, st os.FileInfo) bool { return st != nil && st.IsDir() }, open: openSafetensorsDir},
	{accepts: acceptsGGUF, open: openGGUF},
	{accepts: hasSuffix(".safetensors"), open: openSafetensorsFile},
	{accepts: hasSuffix(".bin"), open: openLlama2c},
}

func hasSuffix(ext string) func(string, os.FileInfo) bool {
	return func(path string, st os.FileInfo) bool {
		return st != nil && !st.IsDir() && strings.HasSuffix(path, ext)
	}
}

// openSource opens path with the first kind that accepts it.
func openSource(path string, mapped func(file string)) (*source, error) {
	st, err := os.Stat(path)
	if err != nil {
		st = nil
	}
	for _, k := range sourceKinds {
		if k.accepts(path, st) {
			return k.open(path, mapped)
		}
	}
	if err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("%s: not a checkpoint directory, .safetensors, GGUF or llama2.c .bin file", path)
}

// close unmaps every file of the source; the tensors are invalid after it.
func (s *source) close() error {
	var first error
	for _, m := range s.maps {
		if err := m.close(); err != nil && first == nil {
			first = err
		}
	}
	s.maps = nil
	return first
}

// locate names the mapped input file holding addr and addr's offset in
// it, so a memory fault (fileio.GuardFaultIn) names the shard that was
// truncated; the source's path when no mapping holds it.
func (s *source) locate(addr uintptr) (string, int64) {
	for _, m := range s.maps {
		if len(m.data) == 0 {
			continue
		}
		base := uintptrOf(m.data)
		if addr >= base && addr-base < uintptr(len(m.data)) {
			return m.path, int64(addr - base)
		}
	}
	return s.path, 0
}

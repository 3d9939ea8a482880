package convert

import (
	"fmt"
	"sort"
	"strings"

	"github.com/cflow-dev/cflow/archspec"
)

// family is what one model family fixes for conversion: how the runtime
// combines its streams, which weights must exist, the tensor names (data,
// naming.go) and its typed config (familyConfig, config_base.go), which
// maps the family's keys onto header flags and metadata — refusing, by key
// and value, what the runtime does not implement. Each family lives in its
// own family_<name>.go and registers itself; adding one touches no switch.
type family struct {
	name        string   // general.architecture, the --model name
	aliases     []string // lower-case short names, HF model_type values and class names
	combine     archspec.CombineStyle
	denseDelay  int
	expertDelay int
	needExperts bool // MoE is part of the semantics
	noDense     bool // the MoE replaces the dense FFN
	defaultEps  float64
	names       naming // hfNames when not set
	// newConfig returns the family's config struct holding its own
	// defaults, for the decoding step to fill (decodeFamily).
	newConfig func() familyConfig
	// textConfig: the family reads a multimodal config's text_config, with
	// the top-level keys that describe the whole checkpoint.
	textConfig bool
	// prepare reshapes the checkpoint's tensors before anything reads them
	// (a name prefix stripped, towers left out, fused 3-D tensors split
	// into per-expert views); nil for none.
	prepare func(c *checkpoint) error
}

// families is filled by the family files' init functions and never
// written afterwards.
var families []*family

func register(f *family) {
	if f.defaultEps == 0 {
		f.defaultEps = 1e-6
	}
	if f.names.layer == nil {
		f.names = hfNames
	}
	families = append(families, f)
}

// Architectures lists the names --model accepts (short names too), for
// help text and error messages.
func Architectures() []string {
	var out []string
	for _, f := range families {
		out = append(out, f.name)
		for _, a := range f.aliases {
			if !strings.Contains(a, "for") {
				out = append(out, a)
			}
		}
	}
	sort.Strings(out)
	return dedup(out)
}

func dedup(s []string) []string {
	var out []string
	for i, x := range s {
		if i == 0 || x != s[i-1] {
			out = append(out, x)
		}
	}
	return out
}

// lookupFamily resolves a full name, alias, model_type or HF class name,
// case-insensitively.
func lookupFamily(name string) (*family, bool) {
	n := strings.ToLower(strings.TrimSpace(name))
	for _, f := range families {
		if f.name == n {
			return f, true
		}
		for _, a := range f.aliases {
			if a == n {
				return f, true
			}
		}
	}
	return nil, false
}

// configIdentity are the keys that say which family a config describes,
// decoded before the family's own struct can be chosen.
type configIdentity struct {
	Architecture  string       `json:"architecture"` // pipeline-native
	Architectures []string     `json:"architectures"`
	ModelType     string       `json:"model_type"`
	CombineStyle  combineValue `json:"combine_style"` // pipeline-native
	ExpertDelay   *int         `json:"expert_delay"`  // pipeline-native
}

// detectFamily reads the architecture from the config: the pipeline-native
// "architecture" key, else HF "architectures", else "model_type", else the
// pipeline-native combine_style.
func detectFamily(file string, id configIdentity) (*family, error) {
	if a := id.Architecture; a != "" {
		if f, ok := lookupFamily(a); ok {
			return f, nil
		}
		return nil, fmt.Errorf("%s: unknown architecture %q (known: %s)", file, a, strings.Join(Architectures(), ", "))
	}
	for _, a := range id.Architectures {
		if f, ok := lookupFamily(a); ok {
			return f, nil
		}
	}
	if f, ok := lookupFamily(strings.ToLower(id.ModelType)); ok {
		return f, nil
	}
	if f := detectNative(id); f != nil {
		return f, nil
	}
	return nil, fmt.Errorf("%s: unknown architecture (architectures %v, model_type %q); pass --model with one of %s",
		file, id.Architectures, id.ModelType, strings.Join(Architectures(), ", "))
}

// pickFamily detects the family and applies --model: forcing names the
// architecture when the config names none cflow knows, and is refused
// when the config names a different one (a silent override would convert
// one family's weights under another's equations).
func pickFamily(file string, id configIdentity, force string) (*family, error) {
	detected, detErr := detectFamily(file, id)
	if force == "" {
		return detected, detErr
	}
	f, ok := lookupFamily(force)
	if !ok {
		return nil, fmt.Errorf("--model %q: unknown architecture (known: %s)", force, strings.Join(Architectures(), ", "))
	}
	if detected != nil && detected != f {
		return nil, fmt.Errorf("--model %s contradicts %s, which describes architecture %s; drop --model or fix the config", f.name, file, detected.name)
	}
	return f, nil
}

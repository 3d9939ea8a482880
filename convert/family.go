package convert

import (
	"fmt"
	"sort"
	"strings"

	"github.com/cflow-dev/cflow/cflowfmt"
)

// family is what one model family fixes for conversion: how the runtime
// combines its streams, which weights must exist, the tensor names (data,
// naming.go) and a configure step that decodes the family's own config
// keys into header flags and metadata — refusing, by key and value, what
// the runtime does not implement. Each family lives in its own
// family_<name>.go and registers itself; adding one touches no switch.
type family struct {
	name        string   // general.architecture, the --model name
	aliases     []string // lower-case short names, HF model_type values and class names
	combine     cflowfmt.CombineStyle
	denseDelay  int
	expertDelay int
	needExperts bool // MoE is part of the semantics
	noDense     bool // the MoE replaces the dense FFN
	defaultEps  float64
	names       naming
	// hf marks a Hugging Face family: the pipeline-native keys
	// (combine_style, delays, …) mean nothing to it.
	hf bool
	// prepare reshapes the checkpoint before anything reads it (a nested
	// text config lifted, a name prefix stripped, fused 3-D tensors split
	// into per-expert views); nil for none.
	prepare func(c *checkpoint) error
	// geometry adjusts the generic sizes read from config.json (expert
	// widths under family-specific keys, the window); nil keeps them.
	geometry func(cfg cfgMap, g *geom) error
	// configure fills the family's flags, metadata and layer vectors once
	// the header geometry is known.
	configure func(s *modelSpec, c *checkpoint) error
}

// families is filled by the family files' init functions and never
// written afterwards.
var families []*family

func register(f *family) {
	if f.defaultEps == 0 {
		f.defaultEps = 1e-6
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

// detectFamily reads the architecture from config.json: the pipeline-native
// "architecture" key, else HF "architectures", else "model_type", else the
// pipeline-native combine_style.
func detectFamily(c cfgMap) (*family, error) {
	if a := c.str("architecture"); a != "" {
		if f, ok := lookupFamily(a); ok {
			return f, nil
		}
		return nil, fmt.Errorf("%s: unknown architecture %q (known: %s)", c.file, a, strings.Join(Architectures(), ", "))
	}
	archs, err := c.strings("architectures")
	if err != nil {
		return nil, err
	}
	for _, a := range archs {
		if f, ok := lookupFamily(a); ok {
			return f, nil
		}
	}
	mt := strings.ToLower(c.str("model_type"))
	if f, ok := lookupFamily(mt); ok {
		return f, nil
	}
	if f, err := detectNative(c); f != nil || err != nil {
		return f, err
	}
	return nil, fmt.Errorf("%s: unknown architecture (architectures %v, model_type %q); pass --model with one of %s",
		c.file, archs, c.str("model_type"), strings.Join(Architectures(), ", "))
}

// pickFamily detects the family and applies --model: forcing names the
// architecture when the config names none cflow knows, and is refused
// when the config names a different one (a silent override would convert
// one family's weights under another's equations).
func pickFamily(cfg cfgMap, force string) (*family, error) {
	detected, detErr := detectFamily(cfg)
	if force == "" {
		return detected, detErr
	}
	f, ok := lookupFamily(force)
	if !ok {
		return nil, fmt.Errorf("--model %q: unknown architecture (known: %s)", force, strings.Join(Architectures(), ", "))
	}
	if detected != nil && detected != f {
		return nil, fmt.Errorf("--model %s contradicts %s, which describes architecture %s; drop --model or fix the config", f.name, cfg.file, detected.name)
	}
	return f, nil
}

// configCombine reads "combine_style" as a name or an integer.
func configCombine(c cfgMap) (cflowfmt.CombineStyle, bool, error) {
	if !c.present("combine_style") {
		return 0, false, nil
	}
	if s := c.str("combine_style"); s != "" {
		for i := 0; cflowfmt.CombineStyle(i).Valid(); i++ {
			if strings.EqualFold(cflowfmt.CombineStyle(i).String(), s) {
				return cflowfmt.CombineStyle(i), true, nil
			}
		}
		return 0, false, fmt.Errorf("%s: unknown combine_style %q", c.file, s)
	}
	n, err := c.int("combine_style", 0)
	if err != nil {
		return 0, false, err
	}
	if !cflowfmt.CombineStyle(n).Valid() {
		return 0, false, fmt.Errorf("%s: unknown combine_style %d", c.file, n)
	}
	return cflowfmt.CombineStyle(n), true, nil
}

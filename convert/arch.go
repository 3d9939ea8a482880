package convert

import (
	"fmt"
	"sort"
	"strings"

	"github.com/cflow-dev/cflow/cflowfmt"
)

// preset is what an architecture name fixes: how the runtime combines the
// streams, the spec's default delays and which weights must exist.
type preset struct {
	name        string
	combine     cflowfmt.CombineStyle
	denseDelay  int
	expertDelay int
	needExperts bool // MoE is part of the semantics
	noDense     bool // the MoE replaces the dense FFN (mixtral)
	mixtral     bool // HF Mixtral tensor names
}

var presets = []preset{
	{name: "llama", combine: cflowfmt.PreNorm},
	{name: "mixtral", combine: cflowfmt.PreNorm, needExperts: true, noDense: true, mixtral: true},
	{name: "arch1_decoupled_streams", combine: cflowfmt.DecoupledStreams},
	{name: "arch2_4_combined", combine: cflowfmt.DelayedSum, denseDelay: 1, expertDelay: 2, needExperts: true},
	{name: "arch2_4_sync", combine: cflowfmt.DelayedSum, denseDelay: 1, needExperts: true},
	{name: "arch3_pipeline_registers", combine: cflowfmt.PipelineRegisters},
	{name: "arch4_async_experts", combine: cflowfmt.AsyncExperts, expertDelay: 2, needExperts: true},
	{name: "arch5_fixed_point", combine: cflowfmt.PreNorm},
	{name: "gemma4", combine: cflowfmt.ParallelSqrt2},
}

// aliases are the report's short names and the HF class names.
var aliases = map[string]string{
	"arch1": "arch1_decoupled_streams", "arch2_4": "arch2_4_combined", "arch2": "arch2_4_combined",
	"arch2_4_combined": "arch2_4_combined", "arch2_4_sync": "arch2_4_sync",
	"arch3": "arch3_pipeline_registers", "arch4": "arch4_async_experts", "arch5": "arch5_fixed_point",
	"llamaforcausallm": "llama", "mixtralforcausallm": "mixtral",
	"gemma4forcausallm": "gemma4", "gemma4forconditionalgeneration": "gemma4", "gemma4_text": "gemma4",
	"llama2c": "llama", "stories": "llama",
}

// Architectures lists the preset names --model accepts (short names too),
// for help text and error messages.
func Architectures() []string {
	var out []string
	for _, p := range presets {
		out = append(out, p.name)
	}
	for a := range aliases {
		if !strings.Contains(a, "for") && a != "gemma4_text" {
			out = append(out, a)
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

// lookupPreset resolves a full or short name, case-insensitively.
func lookupPreset(name string) (*preset, bool) {
	n := strings.ToLower(strings.TrimSpace(name))
	if a, ok := aliases[n]; ok {
		n = a
	}
	for i := range presets {
		if presets[i].name == n {
			return &presets[i], true
		}
	}
	return nil, false
}

// detectPreset reads the architecture from config.json: the pipeline-native
// "architecture" key, else HF "architectures", else "model_type", else the
// pipeline-native combine_style.
func detectPreset(c cfgMap) (*preset, error) {
	if a := c.str("architecture"); a != "" {
		if p, ok := lookupPreset(a); ok {
			return p, nil
		}
		return nil, fmt.Errorf("%s: unknown architecture %q (known: %s)", c.file, a, strings.Join(Architectures(), ", "))
	}
	archs, err := c.strings("architectures")
	if err != nil {
		return nil, err
	}
	for _, a := range archs {
		if p, ok := lookupPreset(a); ok {
			return p, nil
		}
	}
	mt := strings.ToLower(c.str("model_type"))
	if p, ok := lookupPreset(mt); ok {
		return p, nil
	}
	if strings.HasPrefix(mt, "gemma4") {
		p, _ := lookupPreset("gemma4")
		return p, nil
	}
	if cs, ok, err := configCombine(c); err != nil {
		return nil, err
	} else if ok {
		ed, err := c.int("expert_delay", -1)
		if err != nil {
			return nil, err
		}
		switch cs {
		case cflowfmt.DelayedSum:
			if ed == 0 {
				p, _ := lookupPreset("arch2_4_sync")
				return p, nil
			}
			p, _ := lookupPreset("arch2_4_combined")
			return p, nil
		case cflowfmt.AsyncExperts:
			p, _ := lookupPreset("arch4")
			return p, nil
		case cflowfmt.ParallelSqrt2:
			p, _ := lookupPreset("gemma4")
			return p, nil
		}
	}
	return nil, fmt.Errorf("%s: unknown architecture (architectures %v, model_type %q); pass --model with one of %s",
		c.file, archs, c.str("model_type"), strings.Join(Architectures(), ", "))
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

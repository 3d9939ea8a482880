package convert

import (
	"bytes"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/cflow-dev/cflow/archspec"
	"github.com/cflow-dev/cflow/cflowfmt"
)

// checkLayerCount refuses a num_hidden_layers smaller than the layers the
// checkpoint holds: the rest would be dropped without a word. The message
// names the first tensor (sorted) of the highest layer.
func checkLayerCount(c *checkpoint, file string, L int) error {
	top, name := -1, ""
	for n := range c.tensors {
		rest, ok := strings.CutPrefix(n, "model.layers.")
		if !ok {
			continue
		}
		i := strings.IndexByte(rest, '.')
		if i <= 0 {
			continue
		}
		if l, err := strconv.Atoi(rest[:i]); err == nil && (l > top || l == top && n < name) {
			top, name = l, n
		}
	}
	if top >= L {
		return fmt.Errorf("%s: num_hidden_layers = %d, but the checkpoint has layer %d (tensor %s); converting would drop layers", file, L, top, name)
	}
	return nil
}

// checkClaimed runs after the layout has resolved every tensor it writes:
// any checkpoint tensor nothing consumed is an error naming the first one
// (sorted), since dropping a weight silently changes the model. A derived
// RoPE buffer (rotary_emb.inv_freq, recomputed from the config) and an
// lm_head identical to the tied embedding are the only tensors left out.
func checkClaimed(c *checkpoint, s *modelSpec) error {
	names := make([]string, 0, len(c.tensors))
	for n := range c.tensors {
		names = append(names, n)
	}
	sort.Strings(names)
	emb := s.p.names.name(0, archspec.MatEmbed, -1)
	lm := s.p.names.name(0, archspec.MatLMHead, -1)
	for _, n := range names {
		if c.claimed[n] || strings.HasSuffix(n, ".rotary_emb.inv_freq") {
			continue
		}
		if n == lm && s.h.Has(cflowfmt.FlagTiedEmbed) {
			if e, ok := c.tensors[emb]; ok && bytes.Equal(e.data, c.tensors[n].data) && e.dt == c.tensors[n].dt {
				continue
			}
			return fmt.Errorf("%s: tensor %s differs from %s, but the config ties the embeddings (tie_word_embeddings); refusing to drop it", c.path, n, emb)
		}
		return fmt.Errorf("%s: tensor %s is not used by architecture %s (unclaimed); refusing to drop it — a wrong --model, a config key that does not match the weights, or a feature cflow does not implement", c.path, n, s.p.name)
	}
	return nil
}

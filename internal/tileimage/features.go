package tileimage

import (
	"fmt"
	"strings"

	"github.com/cflow-dev/cflow/archspec"
)

// Metadata keys of the features above.
const (
	KeyFeatures            = "cflow.features"        // string: comma-separated feature names
	KeyAttnScale           = "attn.scale"            // f32
	KeyEmbedScale          = "embed.scale"           // f32
	KeyRopeScaling         = "rope.scaling"          // string: linear, llama3
	KeyRopeScalingFactor   = "rope.scaling_factor"   // f32
	KeyRopeLowFreqFactor   = "rope.low_freq_factor"  // f32, llama3
	KeyRopeHighFreqFactor  = "rope.high_freq_factor" // f32, llama3
	KeyRopeOriginalContext = "rope.original_context" // u32, llama3
	KeyMoERouting          = "moe.routing"           // string: see archspec.RoutingSoftmaxTopK…
	KeyGlobalKVHeads       = "attn.global_kv_heads"  // u32, full layers' KV heads
	keyLayerPrefix         = "layer."                // layer.<l>.<vector>
)

// LayerKey is the metadata key of layer l's vector (an f32 array).
func LayerKey(l int, vec string) string { return fmt.Sprintf("%s%d.%s", keyLayerPrefix, l, vec) }

// Features returns the feature list of a file, refusing names this version
// does not implement. Without FlagFeatures it is empty.
func Features(h *Header, md *Metadata) (map[string]bool, error) {
	out := map[string]bool{}
	if !h.Has(FlagFeatures) {
		return out, nil
	}
	list := md.String(KeyFeatures, "")
	if list == "" {
		return nil, fmt.Errorf("feature flag %#x set but metadata %s is empty", FlagFeatures, KeyFeatures)
	}
	out, err := archspec.ParseFeatures(list)
	if err != nil {
		return nil, fmt.Errorf("%s %w", KeyFeatures, err)
	}
	return out, nil
}

// featureKeyTypes are the types of the feature keys; a key of another type
// would be read as absent.
var featureKeyTypes = map[string]MetaType{
	KeyFeatures: MetaString, KeyAttnScale: MetaF32, KeyEmbedScale: MetaF32, KeyRopeScaling: MetaString,
	KeyRopeScalingFactor: MetaF32, KeyRopeLowFreqFactor: MetaF32, KeyRopeHighFreqFactor: MetaF32,
	KeyRopeOriginalContext: MetaU32, KeyMoERouting: MetaString, KeyGlobalKVHeads: MetaU32,
}

// checkFeatures is CheckMetadata's part for the features: a known feature
// list, typed keys, and per-layer vectors only as f32 arrays of layers
// that exist.
func checkFeatures(h *Header, md *Metadata) error {
	if _, err := Features(h, md); err != nil {
		return err
	}
	for key, want := range featureKeyTypes {
		if t, ok := md.Type(key); ok && t != want {
			return fmt.Errorf("metadata %s has type %d, want %d", key, t, want)
		}
	}
	if g, ok := md.Type(KeyGlobalKVHeads); ok && g == MetaU32 {
		n := md.U32(KeyGlobalKVHeads, 0)
		if n == 0 || n > uint32(h.NumKVHeads) || uint32(h.NumHeads)%n != 0 {
			return fmt.Errorf("metadata %s %d: want 1..%d dividing the %d query heads", KeyGlobalKVHeads, n, h.NumKVHeads, h.NumHeads)
		}
	}
	for _, k := range md.Keys() {
		rest, ok := strings.CutPrefix(k, keyLayerPrefix)
		if !ok {
			continue
		}
		var l int
		var vec string
		if n, err := fmt.Sscanf(strings.Replace(rest, ".", " ", 1), "%d %s", &l, &vec); n != 2 || err != nil || l < 0 || l >= int(h.NumLayers) {
			return fmt.Errorf("metadata %s: want layer.<0..%d>.<vector>", k, h.NumLayers-1)
		}
		if t, _ := md.Type(k); t != MetaF32s {
			return fmt.Errorf("metadata %s has type %d, want %d (f32 array)", k, t, MetaF32s)
		}
	}
	return nil
}

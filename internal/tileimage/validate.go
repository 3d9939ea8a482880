package tileimage

import (
	"fmt"
	"math"

	"github.com/cflow-dev/cflow/archspec"
)

// MaxPasses bounds the layer passes of one token (layers × block
// iterations): the same limit as the layer count, because every pass owns a
// KV cache and a plan step. A file or config claiming more is refused before
// anything is sized from it, so one large number cannot exhaust memory.
const MaxPasses = 4096

// MaxNUMANodes bounds a shard plan's node count (the converter's
// --numa-nodes and the stored plan): beyond it a plan only multiplies the
// replicated tiles.
const MaxNUMANodes = 64

// CheckMetadata is the one validation of what the header and metadata say
// about execution, run by both readers at Open (so run, verify, bench,
// analyze, export and inspect --check refuse the same files) and by both
// writers at Create: attn.layer_kinds has one byte (0 or 1) per layer;
// every well-known key has its declared type; block iterations, merge
// interval, norm epsilon, RoPE bases and partial factor are in range; the
// delays and combine style form a defined schedule (CheckSchedule); a NUMA
// shard plan parses.
func CheckMetadata(h *Header, md *Metadata) error {
	for key, want := range wellKnownTypes {
		if t, ok := md.Type(key); ok && t != want {
			return fmt.Errorf("metadata %s has type %d, want %d", key, t, want)
		}
	}
	if t, ok := md.Type(KeyLayerKinds); ok {
		k := md.Bytes(KeyLayerKinds)
		if t != MetaBytes || len(k) != int(h.NumLayers) {
			return fmt.Errorf("metadata %s: want %d bytes (one per layer), got type %d, %d bytes", KeyLayerKinds, h.NumLayers, t, len(k))
		}
		for i, b := range k {
			if b != archspec.LayerFull && b != archspec.LayerSliding {
				return fmt.Errorf("metadata %s: layer %d has kind %d, want 0 (full) or 1 (sliding)", KeyLayerKinds, i, b)
			}
		}
	}
	iters := md.U32(KeyBlockIterations, 1)
	if iters == 0 || uint64(iters)*uint64(h.NumLayers) > MaxPasses {
		return fmt.Errorf("metadata %s %d: want 1..%d (layers × iterations at most %d passes)", KeyBlockIterations, iters, MaxPasses/max(1, h.NumLayers), MaxPasses)
	}
	if mi := md.U32(KeyMergeInterval, 3); mi == 0 || mi > MaxPasses {
		return fmt.Errorf("metadata %s %d: want 1..%d", KeyMergeInterval, mi, MaxPasses)
	}
	if v := md.U32(KeyKEqV, 0); v > 1 {
		return fmt.Errorf("metadata %s %d: want 0 or 1", KeyKEqV, v)
	}
	if eps := float64(md.F32(KeyRMSEps, 1e-6)); !(eps > 0 && eps <= 1) {
		return fmt.Errorf("metadata %s %v: want a finite value in (0, 1]", KeyRMSEps, eps)
	}
	for _, k := range []string{KeyRopeTheta, KeyRopeThetaGlobal} {
		if th := float64(md.F32(k, 10000)); !(th > 0) || math.IsInf(th, 0) {
			return fmt.Errorf("metadata %s %v: want a finite value > 0", k, th)
		}
	}
	if p := float64(md.F32(KeyRopePartial, 1)); !(p > 0 && p <= 1) {
		return fmt.Errorf("metadata %s %v: want a value in (0, 1]", KeyRopePartial, p)
	}
	if err := CheckSchedule(h.CombineStyle, int(h.NumLayers), int(iters), int(h.DenseDelay), int(h.ExpertDelay),
		h.IntermediateSize > 0, h.NumExperts > 0); err != nil {
		return err
	}
	if err := checkSumsShape(h, md); err != nil {
		return err
	}
	if err := checkFeatures(h, md); err != nil {
		return err
	}
	if p, ok, err := ReadNUMAPlan(md); err != nil {
		return err
	} else if ok && p.Nodes > MaxNUMANodes {
		return fmt.Errorf("metadata %s: %d nodes, at most %d", KeyNUMAPlan, p.Nodes, MaxNUMANodes)
	}
	return nil
}

// wellKnownTypes is the type every key the runtime reads must have: a key
// of another type would be ignored (the reader's default used instead),
// which is exactly the silent substitution the validation exists to stop.
var wellKnownTypes = map[string]MetaType{
	KeyArchitecture: MetaString, KeyName: MetaString, KeyRMSEps: MetaF32,
	KeyRopeTheta: MetaF32, KeyRopeThetaGlobal: MetaF32, KeyRopePartial: MetaF32,
	KeyMergeInterval: MetaU32, KeyBlockIterations: MetaU32, KeyLayerKinds: MetaBytes,
	KeyKEqV: MetaU32, KeyTokenizerKind: MetaString, KeyTokenizerData: MetaBytes,
	KeyBOS: MetaU32, KeyEOS: MetaU32, KeyNUMAPlan: MetaBytes, KeyExecHeader: MetaBytes,
	KeyLayerChecksums: MetaBytes, KeyAddBOS: MetaU32, KeyEndOfTurn: MetaU32s,
	KeyBOSToken: MetaString, KeyEOSToken: MetaString, KeyChatTemplate: MetaString,
}

// CheckSchedule rejects delay / combine-style / iteration combinations that
// have no defined semantics (spec, "Execution plan"). The header check and
// runtime/plan both call it, so a file the plan would refuse never passes
// Open or inspect --check.
func CheckSchedule(style archspec.CombineStyle, layers, iters, denseDelay, expertDelay int, hasDense, hasMoE bool) error {
	switch {
	case layers <= 0:
		return fmt.Errorf("plan: %d layers", layers)
	case iters < 1 || int64(layers)*int64(iters) > MaxPasses:
		return fmt.Errorf("plan: %d layers × %d block iterations: at most %d passes", layers, iters, MaxPasses)
	case style.DelaysDense() && hasDense && denseDelay < 1:
		return fmt.Errorf("plan: %s needs dense_delay ≥ 1 (its FFN reads x_out(ℓ−δd))", style)
	case !style.DelaysDense() && denseDelay != 0:
		return fmt.Errorf("plan: dense_delay %d is not defined for %s (only for styles that delay the dense FFN)", denseDelay, style)
	case expertDelay != 0 && !style.DefersExperts():
		return fmt.Errorf("plan: expert_delay %d is not defined for %s (only for styles that defer experts)", expertDelay, style)
	case iters > 1 && !style.IteratesBlocks():
		return fmt.Errorf("plan: block iterations are not defined for %s", style)
	}
	return nil
}

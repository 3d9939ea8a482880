package tileimage

// Range is a byte span of a file: the unit of the layer table, the expert
// offset table and the group table.
type Range struct {
	Offset int64 `json:"offset"`
	Length int64 `json:"length"`
}

// End is one past the last byte.
func (r Range) End() int64 { return r.Offset + r.Length }

// Stream slots of a layer-table entry. Each slot is a contiguous run of
// aligned tiles (or, for SlotExpertTable, the (u64 offset, u64 length)
// array), so a reader can walk it without knowing the architecture.
const (
	SlotAttn        = 0 // attn_norm, Q/K/V interleaved by stripe, O
	SlotDense       = 1 // ffn_norm, gate/up interleaved by stripe, down
	SlotMoE         = 2 // moe_norm (or ffn_norm when no dense FFN), router
	SlotExpertTable = 3 // NumExperts × (u64 offset, u64 length)
	SlotExpertBank  = 4 // every expert's gate, up, down tiles
	SlotsPerLayer   = 5
)

// Slots of the final (vocabulary) entry of the layer table.
const (
	SlotEmbed     = 0
	SlotLMHead    = 1
	SlotFinalNorm = 2
)

// Layer is one layer's weights as the runtime consumes them, independent of
// which file format they came from. Tile slices are in file order; their
// bytes alias the mapping.
type Layer struct {
	AttnNorm []float32 // Na
	FFNNorm  []float32 // Nf (nil when the layer has neither dense FFN nor MoE using it)
	MoENorm  []float32 // Nr, archspec.DelayedSum only
	QKV      []MappedTile
	O        []MappedTile
	GateUp   []MappedTile
	Down     []MappedTile
	Router   []MappedTile
	// Experts holds each expert's byte range in the file; ExpertTiles in the
	// reader parses a range only when the router selects it.
	Experts []Range
	// Streams records where each stream slot lies, for byte accounting and
	// read-order tests.
	Streams [SlotsPerLayer]Range
}

// Model is what both readers (cflowfmt.Open, vflowfmt.Open) hand the
// runtime: the header, the metadata and every non-expert tile indexed by
// layer and role. Expert tiles are parsed lazily through ExpertTiles.
type Model struct {
	Path      string
	Header    Header
	Meta      *Metadata
	Layers    []Layer
	Embed     []MappedTile // vocab × d, row stripes
	LMHead    []MappedTile // nil when FlagTiedEmbed
	FinalNorm []float32
	// ExpertTiles parses (and may cache) the tiles of expert e of a layer:
	// gate, up, down, in file order. Set by the reader.
	ExpertTiles func(layer, e int) ([]MappedTile, error)
	// Close releases the mapping; tiles must not be used afterwards.
	Close func() error
	// Image is the mapping of the whole file the tiles alias (nil when the
	// image was not mapped: OpenBytes, files under a page), so bench can
	// report how much of it the kernel maps with 2 MiB pages
	// (fileio.MappedHugePages). Set by OpenMapped.
	Image []byte
}

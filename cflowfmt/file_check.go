package cflowfmt

import "github.com/cflow-dev/cflow/internal/tileimage"

// Walk calls fn for every tile of the file in layer-table order (entry by
// entry, slot by slot, experts in index order), parsing and validating each
// header, expert tiles included. inspect --tiles and Check use it.
func (f *File) Walk(fn func(Loc, *MappedTile) error) error {
	L := int(f.Header.NumLayers)
	for l := 0; l <= L; l++ {
		for s := 0; s < SlotsPerLayer; s++ {
			if s == SlotExpertTable || l == L && s > SlotFinalNorm {
				continue
			}
			if l < L && s == SlotExpertBank {
				for e, r := range f.Experts[l] {
					ts, err := ParseExpert(f.data, r, &f.Header, l, e)
					if err != nil {
						return f.named(err)
					}
					for i := range ts {
						if err := fn(Loc{Layer: l, Slot: s, Expert: e}, &ts[i]); err != nil {
							return err
						}
					}
				}
				continue
			}
			err := f.walkSlot(l, s, func(t MappedTile) error { return fn(Loc{Layer: l, Slot: s, Expert: -1}, &t) })
			if err != nil {
				return f.named(err)
			}
		}
	}
	return nil
}

func (f *File) named(err error) error {
	if fe, ok := err.(*FormatError); ok && fe.File == "" {
		fe.File = f.Path
	}
	return err
}

// Check reads every tile, experts included, and validates what Open does
// not: the per-layer weight checksums (when the file has them), the zero
// padding between tiles, exact coverage of every matrix by
// its tiles (each weight exactly once, shapes per layer attention kind),
// each expert having gate, up and down, and finite norm and router values.
// It returns the first problem as a *FormatError.
func (f *File) Check() error {
	return f.named(tileimage.CheckWalk(&f.Header, f.Meta, f.data, f.Walk))
}

// Describe is tileimage.DescribeModel for a .cflow file, plus its layer table.
func (f *File) Describe() (*Description, error) {
	d, err := tileimage.DescribeModel("cflow", f.Size, f.Model, f.Walk)
	for _, e := range f.Table {
		d.LayerTable = append(d.LayerTable, append([]Range(nil), e[:]...))
	}
	return d, err
}

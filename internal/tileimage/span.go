package tileimage

import (
	"fmt"
	"sort"
)

// Span is a byte range plus the file offset of the table entry that
// declared it, so an overlap error can name the entry to blame.
type Span struct {
	Range
	At int64
}

// Disjoint sorts spans by offset and reports the first pair that overlap,
// blaming the later one's entry. Readers call it on every table they load.
func Disjoint(spans []Span) error {
	sort.Slice(spans, func(i, j int) bool { return spans[i].Offset < spans[j].Offset })
	for i := 1; i < len(spans); i++ {
		a, b := spans[i-1], spans[i]
		if b.Offset < a.End() {
			return errAt(b.At, "range %d+%d overlaps range %d+%d", b.Offset, b.Length, a.Offset, a.Length)
		}
	}
	return nil
}

func errAt(off int64, format string, a ...any) error {
	return &FormatError{Offset: off, What: fmt.Sprintf(format, a...)}
}

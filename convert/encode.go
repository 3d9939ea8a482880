package convert

// rowF16 is the checkpoint bytes of logical row r, columns [c0, c0+n), of
// an f16 tensor (after the row permutation, if any), which
// quant.EncodeRowF16 quantizes in place.
func (t *tensor) rowF16(r, c0, n int) []byte {
	if t.rowOf != nil {
		r = t.rowOf(r)
	}
	return t.data[(r*t.cols+c0)*2 : (r*t.cols+c0+n)*2]
}

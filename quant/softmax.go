package quant

import (
	"fmt"
	"math"
)

// ExpScores is attention's softmax numerator: it returns
// m = max_i s[i]·scale and sets p[i] = e^(s[i]·scale − m), or 0 where that
// exponent is below −87 (e^x is then under 2^−125, past what the float32
// sum it joins can hold). The exponential is Cephes' expf in float32, each
// multiply and add rounded on its own (expf32), and the AVX2 loop does the
// same operations one for one, so p is bit-identical on every path and
// for every length: a decode step and a batched prefill column computing
// the same head agree to the bit. Scores must not be NaN. len(p) ≥ len(s).
func ExpScores(s []float32, scale float32, p []float32) float32 {
	n := len(s)
	if n == 0 || len(p) < n {
		panic(fmt.Sprintf("quant: ExpScores of %d scores into %d", n, len(p)))
	}
	n8 := 0
	if expScoresAVX2 {
		n8 = n &^ 7
	}
	mx := float32(math.Inf(-1))
	if n8 > 0 {
		mx = maxScaled256(&s[0], n8, scale)
	}
	for _, v := range s[n8:] {
		mx = max(mx, v*scale)
	}
	if n8 > 0 {
		expShifted256(&s[0], n8, scale, mx, &p[0])
	}
	for i := n8; i < n; i++ {
		var v float32
		if x := s[i]*scale - mx; x >= -87 {
			v = expf32(x)
		}
		p[i] = v
	}
	return mx
}

// expf32 is e^x for x in [−87, 88] to within 2 ulp (Cephes' expf: x =
// n·ln2 + r with |r| ≤ ln2/2, a degree-6 polynomial for e^r, 2^n by
// exponent bits): the runtime's softmax exp before ExpScores, kept
// verbatim as the scalar truth TestExpScores holds the AVX2 loop to.
func expf32(x float32) float32 {
	const (
		log2e = 1.44269504088896341
		ln2hi = 0.693359375
		ln2lo = -2.12194440e-4
		round = 12582912 // 1.5·2²³: adding it rounds a float32 to an integer
	)
	n := (x*log2e + round) - round
	r := x - n*ln2hi - n*ln2lo
	p := ((((((1.9875691500e-4*r+1.3981999507e-3)*r+8.3334519073e-3)*r+4.1665795894e-2)*r+
		1.6666665459e-1)*r+5.0000001201e-1)*r*r + r + 1)
	return p * math.Float32frombits(uint32(int32(n)+127)<<23)
}

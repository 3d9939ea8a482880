package grammar

import "math/big"

// Number text limits (llama.cpp's json-schema-to-grammar has the same
// integer and fraction caps); a two-digit exponent keeps every number a
// finite float64.
const (
	maxIntDigits  = 16
	maxFracDigits = 16
	maxExpDigits  = 2
)

// numParts is a number's text split up as far as it goes.
type numParts struct {
	neg          bool
	intDigits    string
	dot          bool
	frac         string
	exp, expSign bool
	expDigits    int
	ok, complete bool
}

// parseNum checks that text is a prefix of a number this terminal may
// write, and whether it is a whole one.
func (t *terminal) parseNum(text string) numParts {
	var p numParts
	i := 0
	if i < len(text) && text[i] == '-' {
		p.neg = true
		i++
	}
	j := i
	for i < len(text) && text[i] >= '0' && text[i] <= '9' {
		i++
	}
	p.intDigits = text[j:i]
	if len(p.intDigits) > maxIntDigits || len(p.intDigits) > 1 && p.intDigits[0] == '0' {
		return p
	}
	if i < len(text) && text[i] == '.' {
		if t.num.integer || p.intDigits == "" {
			return p
		}
		p.dot = true
		i++
		j = i
		for i < len(text) && text[i] >= '0' && text[i] <= '9' {
			i++
		}
		p.frac = text[j:i]
		if len(p.frac) > maxFracDigits || i < len(text) && p.frac == "" {
			return p
		}
	}
	if i < len(text) && (text[i] == 'e' || text[i] == 'E') {
		if t.num.integer || t.num.lo != nil || t.num.hi != nil || p.intDigits == "" || p.dot && p.frac == "" {
			return p
		}
		p.exp = true
		i++
		if i < len(text) && (text[i] == '+' || text[i] == '-') {
			p.expSign = true
			i++
		}
		j = i
		for i < len(text) && text[i] >= '0' && text[i] <= '9' {
			i++
		}
		p.expDigits = i - j
		if p.expDigits > maxExpDigits {
			return p
		}
	}
	if i != len(text) {
		return p
	}
	p.ok = true
	p.complete = p.intDigits != "" && (!p.dot || p.frac != "") && (!p.exp || p.expDigits > 0)
	return p
}

func (t *terminal) stepNumber(s sub, c byte) (sub, bool) {
	text := s.s + string(c)
	p := t.parseNum(text)
	if !p.ok || !t.num.reachable(p) {
		return s, false
	}
	s.a = 1
	s.s = text
	return s, true
}

func (t *terminal) numberFinal(s sub) bool {
	if s.a == 0 {
		return false
	}
	p := t.parseNum(s.s)
	if !p.complete {
		return false
	}
	if t.num.lo == nil && t.num.hi == nil {
		return true
	}
	v, _ := new(big.Rat).SetString(s.s)
	return t.num.inBounds(v)
}

func (n numberSpec) inBounds(v *big.Rat) bool {
	if n.lo != nil {
		c := v.Cmp(n.lo)
		if c < 0 || c == 0 && n.loExc {
			return false
		}
	}
	if n.hi != nil {
		c := v.Cmp(n.hi)
		if c > 0 || c == 0 && n.hiExc {
			return false
		}
	}
	return true
}

// grid is the spacing of the values a bounded number can take: 1 for
// integers, 10^-16 otherwise (no exponent under bounds).
func (n numberSpec) grid() *big.Rat {
	if n.integer {
		return big.NewRat(1, 1)
	}
	return new(big.Rat).SetFrac(big.NewInt(1), pow10(maxFracDigits))
}

func pow10(k int) *big.Int {
	return new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(k)), nil)
}

// reachable says whether some whole number extending p lies within the
// bounds: the completions of a prefix are grid points in a few intervals
// (one per count of integer digits still to come), each checked against
// the bounds exactly.
func (n numberSpec) reachable(p numParts) bool {
	if n.lo == nil && n.hi == nil {
		return true
	}
	g := n.grid()
	// Magnitude intervals [a, b] reachable from p.
	type iv struct{ a, b *big.Rat }
	var ivs []iv
	maxMag := new(big.Rat).Sub(new(big.Rat).SetInt(pow10(maxIntDigits)), g)
	switch {
	case p.intDigits == "":
		ivs = append(ivs, iv{new(big.Rat), maxMag})
	case p.dot:
		a, _ := new(big.Rat).SetString(p.intDigits + "." + p.frac + "0")
		width := new(big.Rat).SetFrac(big.NewInt(1), pow10(len(p.frac)))
		b := new(big.Rat).Add(a, width)
		ivs = append(ivs, iv{a, b.Sub(b, g)})
	case p.intDigits == "0":
		ivs = append(ivs, iv{new(big.Rat), new(big.Rat).Sub(big.NewRat(1, 1), g)})
	default:
		base, _ := new(big.Int).SetString(p.intDigits, 10)
		for k := 0; len(p.intDigits)+k <= maxIntDigits; k++ {
			m := pow10(k)
			a := new(big.Rat).SetInt(new(big.Int).Mul(base, m))
			b := new(big.Rat).SetInt(new(big.Int).Mul(new(big.Int).Add(base, big.NewInt(1)), m))
			if n.integer && p.dot {
				return false
			}
			ivs = append(ivs, iv{a, b.Sub(b, g)})
		}
	}
	lo, hi := n.gridBounds(g)
	for _, v := range ivs {
		var a, b *big.Rat
		if p.neg {
			a, b = new(big.Rat).Neg(v.b), new(big.Rat).Neg(v.a)
		} else if p.intDigits == "" && !p.neg {
			// No sign yet: either sign may come.
			a, b = new(big.Rat).Neg(v.b), v.b
		} else {
			a, b = v.a, v.b
		}
		if lo != nil && lo.Cmp(a) > 0 {
			a = lo
		}
		if hi != nil && hi.Cmp(b) < 0 {
			b = hi
		}
		if a.Cmp(b) <= 0 {
			return true
		}
	}
	return false
}

// gridBounds are the least and greatest grid points within the bounds.
func (n numberSpec) gridBounds(g *big.Rat) (lo, hi *big.Rat) {
	if n.lo != nil {
		lo = ceilGrid(n.lo, g)
		if n.loExc && lo.Cmp(n.lo) == 0 {
			lo = new(big.Rat).Add(lo, g)
		}
	}
	if n.hi != nil {
		hi = floorGrid(n.hi, g)
		if n.hiExc && hi.Cmp(n.hi) == 0 {
			hi = new(big.Rat).Sub(hi, g)
		}
	}
	return lo, hi
}

func floorGrid(x, g *big.Rat) *big.Rat {
	q := new(big.Rat).Quo(x, g)
	f := new(big.Int).Div(q.Num(), q.Denom()) // Euclidean: floor for a positive divisor
	return new(big.Rat).Mul(new(big.Rat).SetInt(f), g)
}

func ceilGrid(x, g *big.Rat) *big.Rat {
	f := floorGrid(x, g)
	if f.Cmp(x) < 0 {
		f.Add(f, g)
	}
	return f
}

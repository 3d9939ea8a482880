package grammar

import "math/big"

// termKind is what a terminal matches; every terminal needs at least one
// byte, so emptiness lives only in rules (nullable alternatives).
type termKind uint8

const (
	termLiteral termKind = iota // lit, byte for byte
	termSpace                   // one non-empty whitespace run (the policy in the package comment)
	termString                  // a JSON string, quotes included, with length bounds
	termNumber                  // a JSON number or integer, with bounds
)

// terminal is one byte-level automaton; its progress lives in a sub.
type terminal struct {
	id   int32
	kind termKind
	lit  []byte
	str  stringSpec
	num  numberSpec
}

// stringSpec bounds a string terminal; maxLen < 0 is unbounded; exclude
// lists decoded values it may not take (declared keys, for additional keys).
type stringSpec struct {
	minLen, maxLen int
	exclude        map[string]bool
}

// numberSpec says which numbers a number terminal takes: integer only,
// and optional bounds (nil: none), exclusive or not.
type numberSpec struct {
	integer      bool
	lo, hi       *big.Rat
	loExc, hiExc bool
}

// elem is one element of an alternative: a terminal, or a rule by index.
type elem struct {
	term *terminal
	rule int32
}

// rule is a nonterminal: alternatives, each a sequence of elements, held as
// indices into Grammar.seqs so a parse frame is two small integers.
type rule struct {
	alts []int32
}

// Grammar is a compiled schema: rules over byte terminals, and the rule a
// document starts from. It is immutable and safe for concurrent use.
type Grammar struct {
	rules    []rule
	seqs     [][]elem
	terms    []*terminal
	nullable []bool // per seq: every element can match empty
	ruleNull []bool
	root     int32
	// fingerprint names what was compiled (the schema's canonical text),
	// the part of a mask cache key that says which grammar.
	fingerprint string
}

// builder assembles a Grammar; rule ids are handed out before their
// alternatives exist so $ref can recurse.
type builder struct {
	g      *Grammar
	space  int32 // rule: optional whitespace
	anyVal int32 // rule: any JSON value (-1 until needed)
	lits   map[string]*terminal
}

func newBuilder() *builder {
	b := &builder{g: &Grammar{}, anyVal: -1, lits: map[string]*terminal{}}
	sp := b.term(&terminal{kind: termSpace})
	b.space = b.rule([]elem{{term: sp, rule: -1}}, nil)
	return b
}

func (b *builder) term(t *terminal) *terminal {
	t.id = int32(len(b.g.terms))
	b.g.terms = append(b.g.terms, t)
	return t
}

// lit is the literal terminal for s, shared between uses.
func (b *builder) lit(s string) elem {
	t, ok := b.lits[s]
	if !ok {
		t = b.term(&terminal{kind: termLiteral, lit: []byte(s)})
		b.lits[s] = t
	}
	return elem{term: t, rule: -1}
}

func (b *builder) ws() elem { return elem{rule: b.space} }

func ref(r int32) elem { return elem{rule: r} }

// newRule reserves a rule id with no alternatives yet.
func (b *builder) newRule() int32 {
	b.g.rules = append(b.g.rules, rule{})
	return int32(len(b.g.rules) - 1)
}

// setAlts gives rule r its alternatives.
func (b *builder) setAlts(r int32, alts ...[]elem) {
	for _, a := range alts {
		b.g.seqs = append(b.g.seqs, a)
		b.g.rules[r].alts = append(b.g.rules[r].alts, int32(len(b.g.seqs)-1))
	}
}

// rule makes a new rule of the given alternatives.
func (b *builder) rule(alts ...[]elem) int32 {
	r := b.newRule()
	b.setAlts(r, alts...)
	return r
}

// finish computes which rules and sequences can match empty (a fixpoint),
// which Complete needs.
func (b *builder) finish(root int32) *Grammar {
	g := b.g
	g.root = root
	g.nullable = make([]bool, len(g.seqs))
	g.ruleNull = make([]bool, len(g.rules))
	for changed := true; changed; {
		changed = false
		for si, s := range g.seqs {
			if g.nullable[si] {
				continue
			}
			ok := true
			for _, e := range s {
				if e.term != nil || !g.ruleNull[e.rule] {
					ok = false
					break
				}
			}
			if ok {
				g.nullable[si] = true
				changed = true
			}
		}
		for ri, r := range g.rules {
			if g.ruleNull[ri] {
				continue
			}
			for _, a := range r.alts {
				if g.nullable[a] {
					g.ruleNull[ri] = true
					changed = true
					break
				}
			}
		}
	}
	return g
}

// leftCycle finds a rule that can reach itself before any byte is
// consumed (a $ref to itself, an anyOf holding its own root): expanding
// it would never end. It returns such a rule, or -1.
func (g *Grammar) leftCycle() int32 {
	const (
		unseen = iota
		active
		doneMark
	)
	mark := make([]uint8, len(g.rules))
	var visit func(r int32) bool
	visit = func(r int32) bool {
		switch mark[r] {
		case active:
			return true
		case doneMark:
			return false
		}
		mark[r] = active
		for _, a := range g.rules[r].alts {
			for _, e := range g.seqs[a] {
				if e.term != nil {
					break
				}
				if visit(e.rule) {
					return true
				}
				if !g.ruleNull[e.rule] {
					break
				}
			}
		}
		mark[r] = doneMark
		return false
	}
	for r := range g.rules {
		if visit(int32(r)) {
			return int32(r)
		}
	}
	return -1
}

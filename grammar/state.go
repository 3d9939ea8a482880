package grammar

import (
	"slices"
	"strconv"
	"strings"
)

// frame is a continuation: after the current terminal, match seq[pos:] of
// Grammar.seqs, then the parent. Frames are shared between threads and
// states and never written after creation.
type frame struct {
	seq, pos int32
	parent   *frame
}

// thread is one parse in progress: a terminal, how far it has got, and
// what follows it.
type thread struct {
	t    *terminal
	s    sub
	cont *frame
}

// State is where a document stands: the set of parses still alive. It is
// immutable; advancing returns a new State, so keeping the old pointer is
// the undo.
type State struct {
	g       *Grammar
	threads []thread
	done    bool // an end-of-sequence token was accepted
}

// maxThreads bounds the parses one state may hold; a schema whose
// ambiguity exceeds it is refused at the byte that would exceed it.
const maxThreads = 4096

// Start is the state before the first byte.
func (g *Grammar) Start() *State {
	var ts []thread
	g.expand(&frame{seq: -1, pos: 0, parent: nil}, g.root, &ts)
	return &State{g: g, threads: dedup(ts)}
}

// expandRule adds, for every alternative of rule r followed by next, the
// threads that start at its first terminal.
func (g *Grammar) expand(next *frame, r int32, out *[]thread) {
	for _, a := range g.rules[r].alts {
		g.expandSeq(a, 0, next, out)
	}
}

// expandSeq adds the threads starting at seq[pos:], then next.
func (g *Grammar) expandSeq(seq, pos int32, next *frame, out *[]thread) {
	s := g.seqs[seq]
	for int(pos) < len(s) {
		e := s[pos]
		after := next
		if int(pos)+1 < len(s) {
			after = &frame{seq: seq, pos: pos + 1, parent: next}
		}
		if e.term != nil {
			*out = append(*out, thread{t: e.term, cont: after})
			return
		}
		g.expand(after, e.rule, out)
		if !g.ruleNull[e.rule] {
			return
		}
		pos++
	}
	g.expandFrame(next, out)
}

// expandFrame adds the threads that start where frame f resumes.
func (g *Grammar) expandFrame(f *frame, out *[]thread) {
	if f == nil || f.seq < 0 {
		return
	}
	g.expandSeq(f.seq, f.pos, f.parent, out)
}

// canEnd says whether everything frame f still asks for can match empty.
func (g *Grammar) canEnd(f *frame) bool {
	for ; f != nil; f = f.parent {
		if f.seq < 0 {
			return true
		}
		for _, e := range g.seqs[f.seq][f.pos:] {
			if e.term != nil || !g.ruleNull[e.rule] {
				return false
			}
		}
	}
	return true
}

// advance feeds byte c to every thread of ts, appending the survivors to out.
func (g *Grammar) advance(ts []thread, c byte, out []thread) []thread {
	for _, th := range ts {
		if s, ok := th.t.step(th.s, c); ok {
			out = append(out, thread{t: th.t, s: s, cont: th.cont})
		}
		if th.t.final(th.s) {
			var fresh []thread
			g.expandFrame(th.cont, &fresh)
			for _, f := range fresh {
				if s, ok := f.t.step(f.s, c); ok {
					out = append(out, thread{t: f.t, s: s, cont: f.cont})
				}
			}
		}
	}
	return dedup(out)
}

// AcceptByte returns the state after byte c, or false if no document
// accepted by the grammar continues so.
func (s *State) AcceptByte(c byte) (*State, bool) {
	if s.done {
		return s, false
	}
	ts := s.g.advance(s.threads, c, nil)
	if len(ts) == 0 || len(ts) > maxThreads {
		return s, false
	}
	return &State{g: s.g, threads: ts}, true
}

// AcceptBytes feeds every byte of p; false (and the state unchanged) if
// one of them is refused.
func (s *State) AcceptBytes(p []byte) (*State, bool) {
	cur := s
	for _, c := range p {
		next, ok := cur.AcceptByte(c)
		if !ok {
			return s, false
		}
		cur = next
	}
	return cur, true
}

// Complete says whether the bytes so far are a whole document.
func (s *State) Complete() bool {
	for _, th := range s.threads {
		if th.t.final(th.s) && s.g.canEnd(th.cont) {
			return true
		}
	}
	return false
}

// Done says whether an end-of-sequence token ended the document.
func (s *State) Done() bool { return s.done }

// dedup drops threads equal to an earlier one, so ambiguity that meets
// again (optional whitespace twice, say) does not multiply.
func dedup(ts []thread) []thread {
	out := ts[:0]
	for _, t := range ts {
		if !slices.ContainsFunc(out, func(u thread) bool { return sameThread(t, u) }) {
			out = append(out, t)
		}
	}
	return out
}

func sameThread(a, b thread) bool {
	if a.t != b.t || a.s != b.s {
		return false
	}
	f, h := a.cont, b.cont
	for f != h {
		if f == nil || h == nil || f.seq != h.seq || f.pos != h.pos {
			return false
		}
		f, h = f.parent, h.parent
	}
	return true
}

// key is a canonical text of the state (threads in sorted order), the
// index of its mask cache.
func (s *State) key() string {
	parts := make([]string, len(s.threads))
	var b strings.Builder
	for i, th := range s.threads {
		b.Reset()
		b.WriteString(strconv.Itoa(int(th.t.id)))
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(int(th.s.n)))
		b.WriteByte(',')
		b.WriteByte('a' + th.s.a)
		b.WriteByte('a' + th.s.b)
		b.WriteString(strconv.Itoa(int(th.s.lo)))
		b.WriteByte(',')
		b.WriteString(strconv.Itoa(int(th.s.hi)))
		b.WriteString(strconv.Quote(th.s.s))
		for f := th.cont; f != nil; f = f.parent {
			b.WriteByte('/')
			b.WriteString(strconv.Itoa(int(f.seq)))
			b.WriteByte('.')
			b.WriteString(strconv.Itoa(int(f.pos)))
		}
		parts[i] = b.String()
	}
	slices.Sort(parts)
	return strings.Join(parts, "|")
}

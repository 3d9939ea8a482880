package serve

import (
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/cflow-dev/cflow/tokenizer"
)

// limits bound what one request may cost before the server does any work
// for it, all derived from --ctx: a request that cannot fit is refused
// from its size alone, before a template renders or a tokenizer runs.
//
// Memory per request is then bounded by the body limit: the body itself,
// the decoder's copies of its strings (the message texts, the rendered
// prompt: each at most the body's size) and ctx token ids — about five
// times bodyBytes, 1.3 MB at --ctx 256 with a byte tokenizer and ≈ 8 MiB ×
// 5 at the cap.
type limits struct {
	// tokenBytes is the most bytes of text one token of the tokenizer
	// stands for (its longest piece); promptBytes = ctx × tokenBytes ×
	// slack, where slack (4 for tokenizer.json pipelines, whose normalizer
	// may shrink text, e.g. NFC composing "e" + U+0301 into "é"; 1 for byte
	// and llama2.c tokenizers) keeps every prompt that fits acceptable.
	tokenBytes, promptBytes int
	// messages bounds a conversation's turns: every turn costs at least
	// one token, so more than ctx cannot fit.
	messages int
	// bodyBytes bounds the body: promptBytes written as JSON's \u escapes
	// (6 bytes a byte), 64 bytes of JSON per message or token id, and
	// 64 KiB for the other fields; never above MaxBodyBytes.
	bodyBytes int64
}

func newLimits(ctx int, tk tokenizer.Tokenizer, vocab int) limits {
	l := limits{tokenBytes: 1, messages: ctx}
	slack := 1
	if tk != nil {
		for id := range vocab {
			l.tokenBytes = max(l.tokenBytes, len(tk.Piece(-1, id)))
		}
		if tk.Kind() != "byte" && tk.Kind() != "llama2c" {
			slack = 4
		}
	}
	l.promptBytes = ctx * l.tokenBytes * slack
	l.bodyBytes = min(int64(MaxBodyBytes), 6*int64(l.promptBytes)+64*int64(ctx+1)+64<<10)
	return l
}

// promptTooLong refuses n bytes of prompt text that cannot fit in ctx
// tokens, before any tokenizing.
func (s *Server) promptTooLong(n int) *apiError {
	if n <= s.lim.promptBytes {
		return nil
	}
	return badRequest("context_length_exceeded", "the prompt's %d bytes cannot fit in %d tokens of context "+
		"(this tokenizer's longest token is %d bytes; at most %d bytes are accepted)", n, s.ctx, s.lim.tokenBytes, s.lim.promptBytes)
}

// gate counts the requests admitted and not yet finished — rendering and
// tokenizing their prompts, waiting in the queue or generating — against
// parallel + queue. A request beyond that is a 429 before any work; one
// within it never is, whatever the scheduler has picked up yet.
type admissions struct {
	capacity int64
	n        atomic.Int64
}

// enter admits one request; false means capacity is reached.
func (g *admissions) enter() bool {
	for {
		n := g.n.Load()
		if n >= g.capacity {
			return false
		}
		if g.n.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// ticket is one admitted request's place; leave gives it back, once,
// whichever of the handler and the scheduler is done with it first.
type ticket struct {
	g    *admissions
	once sync.Once
}

func (t *ticket) leave() {
	if t != nil {
		t.once.Do(func() { t.g.n.Add(-1) })
	}
}

// admit takes a place for a request or answers 503 (draining) or 429.
func (s *Server) admit(w http.ResponseWriter) *ticket {
	if s.draining.Load() {
		writeError(w, errDraining)
		return nil
	}
	if !s.gate.enter() {
		writeError(w, errQueueFull(s.cfg.Queue))
		return nil
	}
	return &ticket{g: &s.gate}
}

func (l limits) String() string {
	return fmt.Sprintf("body ≤ %d bytes, prompt ≤ %d bytes, ≤ %d messages", l.bodyBytes, l.promptBytes, l.messages)
}

package serve

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/cflow-dev/cflow/generate"
)

// readBody reads the request body within ReadTimeout (a client sending a
// byte a second is cut off with a 408) and the body limit (413), then
// lifts the read deadline so the connection's background read cannot time
// out under a long response. A body that failed to arrive closes the
// connection: reading its rest to keep the connection alive would hold
// the handler for as long as the client trickles.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, *apiError) {
	rc := http.NewResponseController(w)
	rc.SetReadDeadline(time.Now().Add(s.cfg.ReadTimeout))
	body, e := readBody(r.Body, s.lim.bodyBytes)
	if e != nil {
		w.Header().Set("Connection", "close")
		return nil, e
	}
	rc.SetReadDeadline(time.Time{})
	return body, nil
}

func (s *Server) chat(w http.ResponseWriter, r *http.Request) {
	var req chatRequest
	body, e := s.readBody(w, r)
	if e == nil {
		e = decodeBody(body, &req, chatKeys)
	}
	body = nil
	if e == nil {
		e = s.checkModel(req.Model)
	}
	if e == nil {
		e = req.unsupported()
	}
	var msgs []Message
	if e == nil {
		msgs, e = req.messages(s.lim.messages)
	}
	if e == nil && s.tmpl == nil {
		e = badRequest("no_tokenizer", "this model file has no tokenizer, so chat messages cannot be encoded; use /v1/completions with token ids")
	}
	if e == nil {
		n := 0
		for _, m := range msgs {
			n += len(m.Content)
		}
		e = s.promptTooLong(n)
	}
	top := -1
	switch {
	case e != nil:
	case req.Logprobs != nil && *req.Logprobs:
		top = 0
		if req.TopLogprobs != nil {
			if top = *req.TopLogprobs; top < 0 || top > generate.MaxTopLogprobs {
				e = badParam("top_logprobs", "%d: must be in [0, %d]", top, generate.MaxTopLogprobs)
			}
		}
	case req.TopLogprobs != nil:
		e = badParam("top_logprobs", "needs \"logprobs\": true")
	}
	var g genRequest
	if e == nil {
		g, e = s.prepare(&req.common)
	}
	if e != nil {
		writeError(w, e)
		return
	}
	t := s.admit(w)
	if t == nil {
		return
	}
	defer t.leave()
	prompt, err := s.tmpl.Prompt(msgs, s.ctx)
	msgs = nil
	if err != nil {
		writeError(w, badParam("messages", "the chat template failed: %v", err))
		return
	}
	s.generate(w, r, g, prompt, top, chatShape, "messages")
}

func (s *Server) completions(w http.ResponseWriter, r *http.Request) {
	var req completionRequest
	body, e := s.readBody(w, r)
	if e == nil {
		e = decodeBody(body, &req, completionKeys)
	}
	body = nil
	if e == nil {
		e = s.checkModel(req.Model)
	}
	if e == nil {
		e = req.unsupported()
	}
	if e == nil && isSet(req.TopLogprobs) {
		e = badParam("top_logprobs", "not a /v1/completions field: send \"logprobs\": N (0 to 5) for N alternatives per token")
	}
	top := -1
	if e == nil && req.Logprobs != nil {
		if *req.Logprobs < 0 || *req.Logprobs > 5 {
			e = badParam("logprobs", "%d: must be in [0, 5]", *req.Logprobs)
		}
		top = *req.Logprobs
	}
	var p completionInput
	if e == nil {
		p, e = s.completionInput(req.Prompt)
	}
	var g genRequest
	if e == nil {
		g, e = s.prepare(&req.common)
	}
	if e != nil {
		writeError(w, e)
		return
	}
	t := s.admit(w)
	if t == nil {
		return
	}
	defer t.leave()
	prompt := p.ids
	if prompt == nil {
		ids, err := generate.EncodePromptLimit(s.cfg.Tokenizer, p.text, s.ctx)
		if err != nil {
			writeError(w, badParam("prompt", "%v", err))
			return
		}
		prompt = ids
	}
	s.generate(w, r, g, prompt, top, completionShape, "prompt")
}

// completionInput is a text completion's prompt: text to tokenize or ids
// to feed as they are.
type completionInput struct {
	text string
	ids  []int
}

// completionInput reads "prompt": a string (BOS and its tokens), a list
// of one string, or a list of token ids (fed as is) — checked against the
// limits, not yet tokenized.
func (s *Server) completionInput(raw json.RawMessage) (completionInput, *apiError) {
	if !isSet(raw) {
		return completionInput{}, badParam("prompt", "required")
	}
	var text string
	if json.Unmarshal(raw, &text) != nil {
		var list []string
		var ids []int
		switch {
		case json.Unmarshal(raw, &list) == nil && len(list) == 1:
			text = list[0]
		case json.Unmarshal(raw, &list) == nil:
			return completionInput{}, badParam("prompt", "%d prompts: one prompt per request is supported", len(list))
		case json.Unmarshal(raw, &ids) == nil && len(ids) > 0:
			for i, id := range ids {
				if id < 0 || id >= s.vocab {
					return completionInput{}, badParam("prompt", "token %d (at %d) outside the vocabulary of %d", id, i, s.vocab)
				}
			}
			return completionInput{ids: ids}, nil
		default:
			return completionInput{}, badParam("prompt", "must be a string, a list of one string or a non-empty list of token ids")
		}
	}
	if s.cfg.Tokenizer == nil {
		return completionInput{}, badParam("prompt", "this model file has no tokenizer; send token ids")
	}
	if e := s.promptTooLong(len(text)); e != nil {
		return completionInput{}, e
	}
	return completionInput{text: text}, nil
}

// genRequest is a request's generation settings, validated before the
// request is admitted.
type genRequest struct {
	c      *common
	stops  []string
	params generate.Params
}

// prepare validates the sampling fields and stop strings.
func (s *Server) prepare(c *common) (genRequest, *apiError) {
	stops, e := c.stops()
	if e != nil {
		return genRequest{}, e
	}
	params, err := c.params(randomSeed)
	if err != nil {
		return genRequest{}, asAPIError(err)
	}
	if _, e := c.maxTokens(1); e != nil {
		return genRequest{}, e
	}
	return genRequest{c: c, stops: stops, params: params}, nil
}

// generate queues the admitted request's sequence and answers with one
// JSON response or an SSE stream. param names the field the prompt came
// from (an empty prompt is the client's error).
func (s *Server) generate(w http.ResponseWriter, r *http.Request, g genRequest, prompt []int, top int, sh shape, param string) {
	c := g.c
	if len(prompt) == 0 {
		writeError(w, badParam(param, "the prompt is empty and the tokenizer has no BOS to start from"))
		return
	}
	if len(prompt) > s.ctx { // tokenizing stopped at ctx + 1 tokens
		writeError(w, badRequest("context_length_exceeded", "the prompt has more than %d tokens, the context (tokenizing stopped there)", s.ctx))
		return
	}
	maxTok, e := c.maxTokens(max(1, s.ctx-len(prompt)))
	if e != nil {
		writeError(w, e)
		return
	}
	seq, err := generate.NewSequence(generate.Request{Prompt: prompt, MaxTokens: maxTok, Ctx: s.ctx, Params: g.params,
		StopIDs: generate.StopIDs(s.cfg.Tokenizer), Stop: g.stops, Tokenizer: s.cfg.Tokenizer, TopLogprobs: top}, s.vocab, s.ctx)
	if err != nil {
		writeError(w, asAPIError(err))
		return
	}
	j := &job{ctx: r.Context(), seq: seq, out: outbox{wake: make(chan struct{}, 1)}, cachePrompt: c.CachePrompt == nil || *c.CachePrompt}
	s.sched.submit(j)
	defer s.sched.withdraw(j)
	rp := &reply{s: s, sh: sh, rc: http.NewResponseController(w), id: sh.idPrefix + fmt.Sprintf("%016x", rand.Uint64()), created: time.Now().Unix(),
		prev: prompt[len(prompt)-1], prompt: len(prompt), j: j, withUsage: c.StreamOptions != nil && c.StreamOptions.IncludeUsage}
	t0 := time.Now()
	var werr error
	if c.Stream {
		werr = rp.stream(w, r, j)
	} else {
		werr = rp.whole(w, r, j)
	}
	batch := ""
	if n := j.ticks.Load(); n > 0 {
		batch = fmt.Sprintf(", %d ticks × %.1f sequences, %.1f ms per tick", n, float64(j.shared.Load())/float64(n),
			float64(j.tickNS.Load())/1e6/float64(n))
		if d := j.decodeTicks.Load(); d > 0 {
			batch += fmt.Sprintf(" (%d without a prompt: %.1f ms each)", d, float64(j.decodeNS.Load())/1e6/float64(d))
		}
	}
	s.metrics.finished(r.URL.Path, t0, j, len(prompt), rp.completion)
	fmt.Fprintf(s.cfg.Log, "%s %s: %d prompt (%d cached) + %d completion tokens, %s, %.2fs%s%s\n", r.Method, r.URL.Path, len(prompt),
		j.cached.Load(), rp.completion, rp.finish, time.Since(t0).Seconds(), batch, errNote(werr))
}

func errNote(err error) string {
	if err == nil {
		return ""
	}
	return " (" + err.Error() + ")"
}

package serve

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/cflow-dev/cflow/generate"
)

func (s *Server) chat(w http.ResponseWriter, r *http.Request) {
	var req chatRequest
	if e := decodeBody(r.Body, &req); e != nil {
		writeError(w, e)
		return
	}
	if e := s.checkModel(req.Model); e != nil {
		writeError(w, e)
		return
	}
	if e := req.unsupported(); e != nil {
		writeError(w, e)
		return
	}
	msgs, e := req.messages()
	if e != nil {
		writeError(w, e)
		return
	}
	if s.tmpl == nil {
		writeError(w, badRequest("no_tokenizer", "this model file has no tokenizer, so chat messages cannot be encoded; use /v1/completions with token ids"))
		return
	}
	top := -1
	switch {
	case req.Logprobs != nil && *req.Logprobs:
		top = 0
		if req.TopLogprobs != nil {
			top = *req.TopLogprobs
		}
	case req.TopLogprobs != nil:
		writeError(w, badParam("top_logprobs", "needs \"logprobs\": true"))
		return
	}
	prompt, err := s.tmpl.Prompt(msgs)
	if err != nil {
		writeError(w, badParam("messages", "the chat template failed: %v", err))
		return
	}
	s.generate(w, r, &req.common, prompt, top, chatShape)
}

func (s *Server) completions(w http.ResponseWriter, r *http.Request) {
	var req completionRequest
	if e := decodeBody(r.Body, &req); e != nil {
		writeError(w, e)
		return
	}
	if e := s.checkModel(req.Model); e != nil {
		writeError(w, e)
		return
	}
	if e := req.unsupported(); e != nil {
		writeError(w, e)
		return
	}
	top := -1
	if req.Logprobs != nil {
		if *req.Logprobs < 0 || *req.Logprobs > 5 {
			writeError(w, badParam("logprobs", "%d: must be in [0, 5]", *req.Logprobs))
			return
		}
		top = *req.Logprobs
	}
	prompt, e := s.completionPrompt(req.Prompt)
	if e != nil {
		writeError(w, e)
		return
	}
	s.generate(w, r, &req.common, prompt, top, completionShape)
}

// completionPrompt reads "prompt": a string (BOS and its tokens), a list
// of one string, or a list of token ids (fed as is).
func (s *Server) completionPrompt(raw json.RawMessage) ([]int, *apiError) {
	if !isSet(raw) {
		return nil, badParam("prompt", "required")
	}
	var text string
	if json.Unmarshal(raw, &text) != nil {
		var list []string
		var ids []int
		switch {
		case json.Unmarshal(raw, &list) == nil && len(list) == 1:
			text = list[0]
		case json.Unmarshal(raw, &list) == nil:
			return nil, badParam("prompt", "%d prompts: one prompt per request is supported", len(list))
		case json.Unmarshal(raw, &ids) == nil && len(ids) > 0:
			for i, id := range ids {
				if id < 0 || id >= s.vocab {
					return nil, badParam("prompt", "token %d (at %d) outside the vocabulary of %d", id, i, s.vocab)
				}
			}
			return ids, nil
		default:
			return nil, badParam("prompt", "must be a string, a list of one string or a non-empty list of token ids")
		}
	}
	if s.cfg.Tokenizer == nil {
		return nil, badParam("prompt", "this model file has no tokenizer; send token ids")
	}
	ids, err := generate.EncodePrompt(s.cfg.Tokenizer, text)
	if err != nil {
		return nil, badParam("prompt", "%v", err)
	}
	if len(ids) == 0 {
		return nil, badParam("prompt", "empty, and the tokenizer has no BOS to start from")
	}
	return ids, nil
}

// generate validates the sampling fields, queues the sequence and answers
// with one JSON response or an SSE stream.
func (s *Server) generate(w http.ResponseWriter, r *http.Request, c *common, prompt []int, top int, sh shape) {
	stops, e := c.stops()
	if e != nil {
		writeError(w, e)
		return
	}
	params, err := c.params(randomSeed)
	if err != nil {
		writeError(w, asAPIError(err))
		return
	}
	maxTok, e := c.maxTokens(max(1, s.ctx-len(prompt)))
	if e != nil {
		writeError(w, e)
		return
	}
	seq, err := generate.NewSequence(generate.Request{Prompt: prompt, MaxTokens: maxTok, Ctx: s.ctx, Params: params,
		StopIDs: generate.StopIDs(s.cfg.Tokenizer), Stop: stops, Tokenizer: s.cfg.Tokenizer, TopLogprobs: top}, s.vocab, s.ctx)
	if err != nil {
		writeError(w, asAPIError(err))
		return
	}
	if s.draining.Load() {
		writeError(w, errDraining)
		return
	}
	j := &job{ctx: r.Context(), seq: seq, out: outbox{wake: make(chan struct{}, 1)}}
	if !s.sched.submit(j) {
		writeError(w, errQueueFull(s.cfg.Queue))
		return
	}
	rp := &reply{s: s, sh: sh, id: sh.idPrefix + fmt.Sprintf("%016x", rand.Uint64()), created: time.Now().Unix(),
		prev: prompt[len(prompt)-1], prompt: len(prompt), withUsage: c.StreamOptions != nil && c.StreamOptions.IncludeUsage}
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
	fmt.Fprintf(s.cfg.Log, "%s %s: %d prompt + %d completion tokens, %s, %.2fs%s%s\n", r.Method, r.URL.Path, len(prompt),
		rp.completion, rp.finish, time.Since(t0).Seconds(), batch, errNote(werr))
}

func errNote(err error) string {
	if err == nil {
		return ""
	}
	return " (" + err.Error() + ")"
}

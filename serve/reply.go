package serve

import (
	"bytes"
	"encoding/json"
	"net/http"
	"time"

	"github.com/cflow-dev/cflow/generate"
)

// shape is what differs between chat and text completion responses.
type shape struct {
	chat                bool
	idPrefix            string
	object, chunkObject string
}

var (
	chatShape       = shape{chat: true, idPrefix: "chatcmpl-", object: "chat.completion", chunkObject: "chat.completion.chunk"}
	completionShape = shape{idPrefix: "cmpl-", object: "text_completion", chunkObject: "text_completion"}
)

// reply builds one request's response from the tokens its job produces.
type reply struct {
	s         *Server
	rc        *http.ResponseController // each write's deadline (Config.WriteTimeout)
	sh        shape
	id        string
	created   int64
	prev      int // the token before the next one (for its text)
	prompt    int
	j         *job // its cached count, for usage
	withUsage bool

	completion int
	finish     generate.Finish
	text       bytes.Buffer
	chatLP     []chatLogprob
	textLP     *textLogprobs
}

type usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
	// PromptTokensDetails.CachedTokens is OpenAI's count of the prompt
	// tokens served from the prompt cache (not fed again).
	PromptTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
}

func (rp *reply) usage() usage {
	u := usage{PromptTokens: rp.prompt, CompletionTokens: rp.completion, TotalTokens: rp.prompt + rp.completion}
	u.PromptTokensDetails.CachedTokens = int(rp.j.cached.Load())
	return u
}

// chatLogprob is one entry of a chat choice's logprobs.content.
type chatLogprob struct {
	Token       string        `json:"token"`
	Logprob     float64       `json:"logprob"`
	Bytes       []int         `json:"bytes"`
	TopLogprobs []chatLogprob `json:"top_logprobs"`
}

// textLogprobs is a text completion choice's logprobs (the legacy shape).
type textLogprobs struct {
	Tokens        []string             `json:"tokens"`
	TokenLogprobs []float64            `json:"token_logprobs"`
	TopLogprobs   []map[string]float64 `json:"top_logprobs"`
	TextOffset    []int                `json:"text_offset"`
}

func (rp *reply) piece(id int) []byte {
	if rp.s.cfg.Tokenizer == nil {
		return nil
	}
	return rp.s.cfg.Tokenizer.Piece(rp.prev, id)
}

func intBytes(b []byte) []int {
	out := make([]int, len(b))
	for i, c := range b {
		out[i] = int(c)
	}
	return out
}

// add takes one token: counts it, records its log-probabilities, and
// returns the entries this token adds (for a stream chunk).
func (rp *reply) add(t generate.Token, withLP bool) (chatLP []chatLogprob, textLP *textLogprobs) {
	if t.Finish != "" {
		rp.finish = t.Finish
	}
	if t.ID < 0 {
		return nil, nil
	}
	rp.completion++
	if withLP {
		p := rp.piece(t.ID)
		if rp.sh.chat {
			e := chatLogprob{Token: string(p), Logprob: t.Logprob, Bytes: intBytes(p), TopLogprobs: []chatLogprob{}}
			for _, a := range t.Top {
				ap := rp.piece(a.ID)
				e.TopLogprobs = append(e.TopLogprobs, chatLogprob{Token: string(ap), Logprob: a.Logprob, Bytes: intBytes(ap)})
			}
			chatLP = []chatLogprob{e}
			rp.chatLP = append(rp.chatLP, e)
		} else {
			top := map[string]float64{}
			for _, a := range t.Top {
				top[string(rp.piece(a.ID))] = a.Logprob
			}
			textLP = &textLogprobs{Tokens: []string{string(p)}, TokenLogprobs: []float64{t.Logprob},
				TopLogprobs: []map[string]float64{top}, TextOffset: []int{rp.text.Len()}}
			if rp.textLP == nil {
				rp.textLP = &textLogprobs{}
			}
			rp.textLP.Tokens = append(rp.textLP.Tokens, textLP.Tokens...)
			rp.textLP.TokenLogprobs = append(rp.textLP.TokenLogprobs, t.Logprob)
			rp.textLP.TopLogprobs = append(rp.textLP.TopLogprobs, top)
			rp.textLP.TextOffset = append(rp.textLP.TextOffset, rp.text.Len())
		}
	}
	rp.prev = t.ID
	rp.text.Write(t.Text)
	return chatLP, textLP
}

// choice is one element of "choices" (the only one: n is 1).
func (rp *reply) choice(text []byte, chatLP []chatLogprob, textLP *textLogprobs, finish generate.Finish, delta, first bool) map[string]any {
	c := map[string]any{"index": 0, "logprobs": nil, "finish_reason": nil}
	if finish != "" {
		c["finish_reason"] = finish
	}
	if rp.sh.chat {
		if chatLP != nil {
			c["logprobs"] = map[string]any{"content": chatLP}
		}
		msg := map[string]any{}
		if !delta || first {
			msg["role"] = "assistant"
		}
		if !delta || len(text) > 0 || first {
			msg["content"] = string(text)
		}
		if delta {
			c["delta"] = msg
		} else {
			c["message"] = msg
		}
	} else {
		if textLP != nil {
			c["logprobs"] = textLP
		}
		c["text"] = string(text)
	}
	return c
}

func (rp *reply) envelope(object string, choices []map[string]any) map[string]any {
	return map[string]any{"id": rp.id, "object": object, "created": rp.created, "model": rp.s.id, "choices": choices}
}

// whole waits for the job to end and answers with one JSON object.
func (rp *reply) whole(w http.ResponseWriter, r *http.Request, j *job) error {
	var buf []generate.Token
	withLP := rp.wantsLogprobs(j)
	for {
		toks, done, err := j.out.take(buf)
		buf = toks
		for _, t := range toks {
			rp.add(t, withLP)
		}
		if err != nil {
			if r.Context().Err() == nil {
				rp.deadline()
				writeError(w, asAPIError(err))
			}
			return err
		}
		if done {
			break
		}
		select {
		case <-j.out.wake:
		case <-r.Context().Done():
			return r.Context().Err()
		}
	}
	var chatLP []chatLogprob
	if withLP {
		chatLP = rp.chatLP
		if chatLP == nil {
			chatLP = []chatLogprob{}
		}
	}
	resp := rp.envelope(rp.sh.object, []map[string]any{rp.choice(rp.text.Bytes(), chatLP, rp.textLP, rp.finish, false, false)})
	resp["usage"] = rp.usage()
	rp.deadline()
	writeJSON(w, http.StatusOK, resp)
	return nil
}

// deadline gives the next write WriteTimeout: a client that stops
// reading is dropped then, never holds its slot.
func (rp *reply) deadline() { rp.rc.SetWriteDeadline(time.Now().Add(rp.s.cfg.WriteTimeout)) }

func (rp *reply) wantsLogprobs(j *job) bool { return j.seq.TopLogprobs() >= 0 }

// stream answers with server-sent events: one chunk per token (its text
// and log-probabilities), a last chunk with the finish reason, the usage
// chunk when asked for, then [DONE].
func (rp *reply) stream(w http.ResponseWriter, r *http.Request, j *job) error {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	send := func(v any) error {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		rp.deadline()
		if _, err := w.Write(append(append([]byte("data: "), b...), '\n', '\n')); err != nil {
			return err
		}
		return nil
	}
	withLP := rp.wantsLogprobs(j)
	ka := rp.s.newKeepAlive()
	defer ka.stop()
	if rp.sh.chat {
		if err := send(rp.envelope(rp.sh.chunkObject, []map[string]any{rp.choice(nil, nil, nil, "", true, true)})); err != nil {
			return err
		}
		if err := rc.Flush(); err != nil {
			return err
		}
	}
	var buf []generate.Token
	for {
		toks, done, err := j.out.take(buf)
		buf = toks
		for _, t := range toks {
			chatLP, textLP := rp.add(t, withLP)
			// Every token but the last gets its chunk, even when its text is
			// held back (a possible stop string, a split character) or it
			// has none (token ids without a tokenizer): the client sees
			// progress token by token.
			if t.Finish == "" || len(t.Text) > 0 || chatLP != nil || textLP != nil {
				if err := send(rp.envelope(rp.sh.chunkObject, []map[string]any{rp.choice(t.Text, chatLP, textLP, "", true, false)})); err != nil {
					return err
				}
			}
		}
		if err != nil {
			if r.Context().Err() == nil {
				send(map[string]any{"error": asAPIError(err)})
				rc.Flush()
			}
			return err
		}
		if done {
			break
		}
		if err := rc.Flush(); err != nil {
			return err
		}
		select {
		case <-j.out.wake:
		case <-ka.C:
			if err := ka.send(w, rp); err != nil {
				return err
			}
		case <-r.Context().Done():
			return r.Context().Err()
		}
	}
	if err := send(rp.envelope(rp.sh.chunkObject, []map[string]any{rp.choice(nil, nil, nil, rp.finish, true, false)})); err != nil {
		return err
	}
	if rp.withUsage {
		u := rp.envelope(rp.sh.chunkObject, []map[string]any{})
		u["usage"] = rp.usage()
		if err := send(u); err != nil {
			return err
		}
	}
	rp.deadline()
	if _, err := w.Write([]byte("data: [DONE]\n\n")); err != nil {
		return err
	}
	return rc.Flush()
}

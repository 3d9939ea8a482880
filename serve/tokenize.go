package serve

import (
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/cflow-dev/cflow/tokenizer"
)

// routeOps adds the routes beside OpenAI's: the Ollama API, llama-server's
// tokenizer endpoints and /metrics.
func (s *Server) routeOps(route func(path, method string, h http.HandlerFunc)) {
	route("/api/chat", http.MethodPost, s.ollamaChat)
	route("/api/generate", http.MethodPost, s.ollamaGenerate)
	route("/api/tags", http.MethodGet, s.ollamaTags)
	route("/api/show", http.MethodPost, s.ollamaShow)
	route("/api/ps", http.MethodGet, s.ollamaPS)
	route("/api/version", http.MethodGet, s.ollamaVersion)
	route("/tokenize", http.MethodPost, s.tokenize)
	route("/detokenize", http.MethodPost, s.detokenize)
	route("/apply-template", http.MethodPost, s.applyTemplate)
	route("/metrics", http.MethodGet, s.serveMetrics)
}

// TemplateRenderer is a ChatTemplate that can also give its rendered text
// (POST /apply-template), before tokenizing.
type TemplateRenderer interface {
	Render(messages []Message) (string, error)
}

var tokenizeKeys = keys{"content": leaf, "add_special": leaf, "parse_special": leaf, "with_pieces": leaf}

// tokenize is llama-server's POST /tokenize: {"content", "add_special"
// (BOS where the tokenizer adds one; default false), "parse_special"
// (special tokens written in the text are matched; default true),
// "with_pieces"} → {"tokens": [id…]} or, with pieces, [{"id", "piece"}]
// (the piece a string when it is valid UTF-8, else its bytes).
func (s *Server) tokenize(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Content      *string `json:"content"`
		AddSpecial   bool    `json:"add_special"`
		ParseSpecial *bool   `json:"parse_special"`
		WithPieces   bool    `json:"with_pieces"`
	}
	body, e := s.readBody(w, r)
	if e == nil {
		e = decodeBody(body, &req, tokenizeKeys)
	}
	switch {
	case e != nil:
	case s.cfg.Tokenizer == nil:
		e = badRequest("no_tokenizer", "this model file has no tokenizer")
	case req.Content == nil:
		e = badParam("content", "required")
	}
	if e != nil {
		writeError(w, e)
		return
	}
	tk := s.cfg.Tokenizer
	ids, err := tokenizer.EncodeText(tk, *req.Content, req.ParseSpecial != nil && !*req.ParseSpecial)
	if err != nil {
		writeError(w, badParam("content", "%v", err))
		return
	}
	if req.AddSpecial && tk.BOS() >= 0 && tokenizer.AddsBOS(tk) {
		ids = append([]int{tk.BOS()}, ids...)
	}
	if !req.WithPieces {
		writeJSON(w, http.StatusOK, map[string]any{"tokens": ids})
		return
	}
	out := make([]map[string]any, len(ids))
	prev := -1
	for i, id := range ids {
		p := tk.Piece(prev, id)
		var piece any = string(p)
		if !utf8.Valid(p) {
			piece = intBytes(p)
		}
		out[i] = map[string]any{"id": id, "piece": piece}
		prev = id
	}
	writeJSON(w, http.StatusOK, map[string]any{"tokens": out})
}

var detokenizeKeys = keys{"tokens": leaf}

// detokenize is POST /detokenize: {"tokens": [id…]} → {"content"}, each
// token's text as it follows the one before (special tokens have none).
func (s *Server) detokenize(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Tokens []int `json:"tokens"`
	}
	body, e := s.readBody(w, r)
	if e == nil {
		e = decodeBody(body, &req, detokenizeKeys)
	}
	if e == nil && s.cfg.Tokenizer == nil {
		e = badRequest("no_tokenizer", "this model file has no tokenizer")
	}
	for i, id := range req.Tokens {
		if e == nil && (id < 0 || id >= s.vocab) {
			e = badParam("tokens", "token %d (at %d) outside the vocabulary of %d", id, i, s.vocab)
		}
	}
	if e != nil {
		writeError(w, e)
		return
	}
	var text []byte
	prev := -1
	for _, id := range req.Tokens {
		text = append(text, s.cfg.Tokenizer.Piece(prev, id)...)
		prev = id
	}
	writeJSON(w, http.StatusOK, map[string]any{"content": string(text)})
}

// applyTemplate is POST /apply-template: a chat completion's body →
// {"prompt"}, the conversation rendered by the file's chat template with
// the assistant's turn opened, as the server would feed it (before
// tokenizing).
func (s *Server) applyTemplate(w http.ResponseWriter, r *http.Request) {
	var req chatRequest
	body, e := s.readBody(w, r)
	if e == nil {
		e = decodeBody(body, &req, chatKeys)
	}
	var msgs []Message
	if e == nil {
		msgs, e = req.messages(s.lim.messages)
	}
	rd, ok := s.tmpl.(TemplateRenderer)
	if e == nil && !ok {
		e = badRequest("no_template", "this model file has no tokenizer, so it has no chat template to apply")
	}
	if e != nil {
		writeError(w, e)
		return
	}
	text, err := rd.Render(msgs)
	if err != nil {
		writeError(w, badParam("messages", "the chat template failed: %v", err))
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"prompt": text})
}

// Render implements TemplateRenderer: the contents joined by newlines
// (the BOS that Prompt adds is a token, not text).
func (p Plain) Render(messages []Message) (string, error) {
	parts := make([]string, len(messages))
	for i, m := range messages {
		parts[i] = m.Content
	}
	return strings.Join(parts, "\n"), nil
}

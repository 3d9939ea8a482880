package serve

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/cflow-dev/cflow/cflowfmt"
)

// OllamaVersion is what GET /api/version reports: the Ollama release
// whose API (api/types.go field names and shapes) this server follows,
// the first with logprobs.
// Clients compare it to decide which fields they may send.
const OllamaVersion = "0.12.11"

// ollamaModelInfo is what Ollama's model listings say about the one file
// served, computed once at start.
type ollamaModelInfo struct {
	size     int64
	modified time.Time
	digest   string
	details  map[string]any
	arch     string
	params   int64
}

func newOllamaModelInfo(m *cflowfmt.Model) ollamaModelInfo {
	h := &m.Header
	info := ollamaModelInfo{arch: m.Meta.String(cflowfmt.KeyArchitecture, "unknown"), params: paramCount(h)}
	if fi, err := os.Stat(m.Path); err == nil {
		info.size, info.modified = fi.Size(), fi.ModTime().UTC()
	}
	// The digest names this file's version without reading all of it:
	// the header, the size and the modification time.
	hb, _ := h.MarshalBinary()
	d := sha256.Sum256(append(hb, fmt.Sprintf("%d %d", info.size, info.modified.UnixNano())...))
	info.digest = hex.EncodeToString(d[:])
	info.details = map[string]any{"parent_model": "", "format": "cflow", "family": info.arch, "families": []string{info.arch},
		"parameter_size": paramSize(info.params), "quantization_level": strings.ToUpper(h.QuantType.String())}
	return info
}

// paramCount estimates the weights from the header's shapes: embedding,
// attention, dense and expert FFNs, the LM head unless tied.
func paramCount(h *cflowfmt.Header) int64 {
	d, v := int64(h.HiddenSize), int64(h.VocabSize)
	attn := d*int64(h.NumHeads)*int64(h.HeadDim)*2 + d*int64(h.NumKVHeads)*int64(h.HeadDim)*2
	ffn := 3*d*int64(h.IntermediateSize) + int64(h.NumExperts)*(3*d*int64(h.ExpertIntermediateSize)+d)
	n := v*d + int64(h.NumLayers)*(attn+ffn)
	if !h.Has(cflowfmt.FlagTiedEmbed) {
		n += v * d
	}
	return n
}

// paramSize writes a count as Ollama's details do ("1.1B", "494.03M").
func paramSize(n int64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.1fB", float64(n)/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.2fM", float64(n)/1e6)
	}
	return fmt.Sprintf("%dK", n/1000)
}

// ollamaEntry is one model as /api/tags and /api/ps list it.
func (s *Server) ollamaEntry(id string) map[string]any {
	return map[string]any{"name": ollamaName(id), "model": ollamaName(id), "modified_at": s.info.modified.Format(time.RFC3339Nano),
		"size": s.info.size, "digest": s.info.digest, "details": s.info.details}
}

func (s *Server) ollamaTags(w http.ResponseWriter, r *http.Request) {
	list := []map[string]any{}
	for _, id := range s.ids() {
		list = append(list, s.ollamaEntry(id))
	}
	writeJSON(w, http.StatusOK, map[string]any{"models": list})
}

// ollamaPS lists the running model: always loaded, never expiring (a
// year ahead), in CPU memory (size_vram 0).
func (s *Server) ollamaPS(w http.ResponseWriter, r *http.Request) {
	list := []map[string]any{}
	for _, id := range s.ids() {
		e := s.ollamaEntry(id)
		e["expires_at"] = time.Now().Add(365 * 24 * time.Hour).UTC().Format(time.RFC3339Nano)
		e["size_vram"] = 0
		e["context_length"] = s.ctx
		list = append(list, e)
	}
	writeJSON(w, http.StatusOK, map[string]any{"models": list})
}

func (s *Server) ollamaVersion(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"version": OllamaVersion})
}

var ollamaShowKeys = keys{"model": leaf, "name": leaf, "verbose": leaf, "system": leaf, "template": leaf, "options": anyKeys}

// ollamaShow describes the model: its chat template, details, the
// header's geometry under GGUF-style model_info keys and capabilities.
func (s *Server) ollamaShow(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model   string `json:"model"`
		Name    string `json:"name"` // Ollama's older name for model
		Verbose bool   `json:"verbose"`
	}
	body, e := s.readBody(w, r)
	if e == nil {
		e = decodeBody(body, &req, ollamaShowKeys)
	}
	if req.Model == "" {
		req.Model = req.Name
	}
	if e == nil {
		e = s.ollamaModel(req.Model)
	}
	if e != nil {
		ollamaError(w, e)
		return
	}
	h := &s.cfg.Model.Header
	a := s.info.arch
	tmpl := s.cfg.Model.Meta.String(cflowfmt.KeyChatTemplate, "")
	caps := []string{"completion"}
	if strings.Contains(tmpl, "tools") {
		caps = append(caps, "tools")
	}
	if strings.Contains(tmpl, "<think>") {
		caps = append(caps, "thinking")
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"license":    "",
		"modelfile":  fmt.Sprintf("# served by cflowc serve\nFROM %s\n", s.cfg.Model.Path),
		"parameters": "",
		"template":   tmpl,
		"details":    s.info.details,
		"model_info": map[string]any{
			"general.architecture":         a,
			"general.parameter_count":      s.info.params,
			a + ".context_length":          s.ctx,
			a + ".embedding_length":        h.HiddenSize,
			a + ".block_count":             h.NumLayers,
			a + ".attention.head_count":    h.NumHeads,
			a + ".attention.head_count_kv": h.NumKVHeads,
			a + ".vocab_size":              h.VocabSize,
		},
		"capabilities": caps,
		"modified_at":  s.info.modified.Format(time.RFC3339Nano),
	})
}

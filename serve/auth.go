package serve

import (
	"crypto/subtle"
	"net/http"
	"slices"
	"strings"
)

// guard is what every request passes before its route: CORS (a browser
// preflight is answered here), then the API key (a 401 in OpenAI's error
// shape, or Ollama's on /api/ paths), then the route, timed for /metrics. /health is exempt from the key, so load balancers and
// orchestrators can probe without one (llama-server's rule).
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.cors(w, r) {
			return
		}
		if r.URL.Path != "/health" && !s.authorized(r) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="cflow"`)
			e := &apiError{Status: http.StatusUnauthorized, Type: "invalid_request_error", Code: strp("invalid_api_key"),
				Message: "invalid or missing API key: send the header Authorization: Bearer KEY (or X-Api-Key: KEY) with a key given to --api-key"}
			if strings.HasPrefix(r.URL.Path, "/api/") {
				ollamaError(w, e) // Ollama's clients read {"error": "…"}
			} else {
				writeError(w, e)
			}
			return
		}
		s.metrics.timed(next, w, r)
	})
}

// authorized checks the request's key against every configured one, in
// constant time per key: "Authorization: Bearer KEY" (OpenAI's clients;
// Ollama's take headers) or "X-Api-Key: KEY" (llama-server's other one).
func (s *Server) authorized(r *http.Request) bool {
	if len(s.cfg.APIKeys) == 0 {
		return true
	}
	got := r.Header.Get("X-Api-Key")
	if a := r.Header.Get("Authorization"); a != "" {
		scheme, tok, ok := strings.Cut(a, " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") {
			return false
		}
		got = strings.TrimSpace(tok)
	}
	if got == "" {
		return false
	}
	ok := 0
	for _, k := range s.cfg.APIKeys {
		ok |= subtle.ConstantTimeCompare([]byte(got), []byte(k))
	}
	return ok == 1
}

// cors sets the CORS headers for an allowed Origin and answers a
// preflight (OPTIONS with Access-Control-Request-Method): 204 when the
// origin is allowed, 403 when not. It reports whether it answered. With
// no --cors-origin no header is sent and browsers keep their same-origin
// rule.
func (s *Server) cors(w http.ResponseWriter, r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if len(s.cfg.CORSOrigins) == 0 || origin == "" {
		return false
	}
	allowed := slices.Contains(s.cfg.CORSOrigins, "*") || slices.Contains(s.cfg.CORSOrigins, origin)
	h := w.Header()
	h.Add("Vary", "Origin")
	if allowed {
		h.Set("Access-Control-Allow-Origin", origin)
		h.Set("Access-Control-Expose-Headers", "Retry-After")
	}
	if r.Method != http.MethodOptions || r.Header.Get("Access-Control-Request-Method") == "" {
		return false
	}
	if !allowed {
		writeError(w, &apiError{Status: http.StatusForbidden, Type: "invalid_request_error", Code: strp("cors_origin"),
			Message: "origin " + origin + " is not among --cors-origin"})
		return true
	}
	h.Set("Access-Control-Allow-Methods", "GET, POST, OPTIONS")
	h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, X-Api-Key")
	h.Set("Access-Control-Max-Age", "600")
	w.WriteHeader(http.StatusNoContent)
	return true
}

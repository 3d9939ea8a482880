// Package serve is cflowc serve: an OpenAI-compatible HTTP server (chat and
// text completions, streaming or not, models, health) over one model file.
// One scheduler goroutine owns the engine and advances every active
// sequence each tick in one pass over the weights (one engine.Batch through engine.Forward: each
// decoding sequence's token and chunks of new prompts together; each
// sequence has its own KV cache; requests join and leave between ticks);
// handlers only parse, validate and stream. Decoding is the generate
// package's and the batched step is bit-identical to a lone Step, so a
// greedy reply is exactly `cflowc run`'s.
package serve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/cflow-dev/cflow/cflowfmt"
	"github.com/cflow-dev/cflow/engine"
	"github.com/cflow-dev/cflow/tokenizer"
)

// Config is one server.
type Config struct {
	Model *cflowfmt.Model
	// ModelID is the name /v1/models lists and requests give as "model";
	// "" is the file's base name without its extension.
	ModelID string
	// Aliases are further names for the model (llama-server's repeated
	// --alias: clients hard-code model names); AnyModel accepts every
	// name (--any-model).
	Aliases  []string
	AnyModel bool
	// APIKeys, when any, are the bearer tokens a request must carry
	// (auth.go; /health is exempt). CORSOrigins are the origins browsers
	// may call from ("*": any).
	APIKeys     []string
	CORSOrigins []string
	// KeepAlive is how often a streamed request whose first token has not
	// come yet gets an SSE comment, so proxies and clients that time out
	// idle streams keep waiting through a long prefill; 0 is
	// DefaultKeepAlive, < 0 sends none.
	KeepAlive time.Duration
	// Tokenizer is the file's; nil serves only completions of token ids.
	Tokenizer tokenizer.Tokenizer
	// Template renders chat messages; nil is Plain.
	Template ChatTemplate
	// Parallel is how many sequences decode together (≥ 1).
	Parallel int
	// Ctx is the positions each sequence may use; 0 is the model's maximum.
	Ctx int
	// Threads per engine (≤ 0: every CPU).
	Threads int
	// CacheK and CacheV are the slots' KV cache types (engine.Options;
	// the zero value is f32, cflowc serve's default f16).
	CacheK, CacheV engine.KVType
	// CacheRAM is the MiB of KV cache idle slots may keep for the prompt
	// cache (a later request sharing a prefix feeds only the rest),
	// evicting the least recently used beyond it: 0 keeps nothing (every
	// request starts from an empty sequence), < 0 has no bound.
	CacheRAM int
	// Queue is how many requests may wait for a slot before the server
	// answers 429; 0 is 4 × Parallel.
	Queue int
	// Log receives one line per request; nil discards.
	Log io.Writer
	// ReadTimeout bounds reading one request's headers and body, so a
	// client sending a byte a second is dropped; 0 is DefaultReadTimeout.
	ReadTimeout time.Duration
	// WriteTimeout bounds each write of a response (each stream chunk, not
	// the whole stream), so a client that stops reading is dropped and
	// its slot freed; 0 is DefaultWriteTimeout.
	WriteTimeout time.Duration
	// IdleTimeout closes a keep-alive connection with no request for this
	// long; 0 is DefaultIdleTimeout.
	IdleTimeout time.Duration
	// MaxConns bounds the open connections (beyond it, new clients wait in
	// the listen backlog), so idle or stalled clients cannot use up the
	// process' file descriptors; 0 is DefaultMaxConns.
	MaxConns int
	// DrainTimeout bounds Serve's drain: past it the requests still in
	// flight are cut off (ErrDrainAborted); 0 is DefaultDrainTimeout.
	DrainTimeout time.Duration
}

// Defaults of the Config fields left 0.
const (
	DefaultReadTimeout  = 30 * time.Second
	DefaultWriteTimeout = 30 * time.Second
	DefaultIdleTimeout  = 30 * time.Second
	DefaultMaxConns     = 512
	DefaultDrainTimeout = 60 * time.Second
)

// Server is a running model: engines, scheduler and HTTP handlers.
type Server struct {
	cfg      Config
	id       string
	vocab    int
	ctx      int
	tmpl     ChatTemplate
	sched    *scheduler
	draining atomic.Bool
	created  int64
	lim      limits
	gate     admissions
	info     ollamaModelInfo
	metrics  *metrics
}

// New starts the engines and the scheduler.
func New(cfg Config) (*Server, error) { return newServer(cfg, nil) }

// newServer is New with a hook that wraps the backend (tests gate it).
func newServer(cfg Config, wrap func(backend) backend) (*Server, error) {
	h := &cfg.Model.Header
	if cfg.Parallel < 1 {
		return nil, fmt.Errorf("serve: parallel %d, need ≥ 1", cfg.Parallel)
	}
	if cfg.Ctx == 0 {
		cfg.Ctx = int(h.MaxSeqLen)
	}
	if cfg.Ctx < 2 || cfg.Ctx > int(h.MaxSeqLen) {
		return nil, fmt.Errorf("serve: ctx %d outside [2, %d] (the model's maximum sequence length)", cfg.Ctx, h.MaxSeqLen)
	}
	if cfg.Queue == 0 {
		cfg.Queue = 4 * cfg.Parallel
	}
	if cfg.Queue < 0 {
		return nil, fmt.Errorf("serve: queue %d, need ≥ 0", cfg.Queue)
	}
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	for _, d := range []struct {
		v   *time.Duration
		def time.Duration
	}{{&cfg.ReadTimeout, DefaultReadTimeout}, {&cfg.WriteTimeout, DefaultWriteTimeout},
		{&cfg.IdleTimeout, DefaultIdleTimeout}, {&cfg.DrainTimeout, DefaultDrainTimeout}} {
		if *d.v == 0 {
			*d.v = d.def
		}
		if *d.v < 0 {
			return nil, fmt.Errorf("serve: timeout %v, need > 0", *d.v)
		}
	}
	if cfg.MaxConns == 0 {
		cfg.MaxConns = DefaultMaxConns
	}
	if cfg.MaxConns < 0 {
		return nil, fmt.Errorf("serve: max conns %d, need ≥ 1", cfg.MaxConns)
	}
	s := &Server{cfg: cfg, id: cfg.ModelID, vocab: int(h.VocabSize), ctx: cfg.Ctx, tmpl: cfg.Template, created: time.Now().Unix(),
		lim: newLimits(cfg.Ctx, cfg.Tokenizer, int(h.VocabSize)), gate: admissions{capacity: int64(cfg.Parallel + cfg.Queue)}}
	if s.id == "" {
		base := filepath.Base(cfg.Model.Path)
		s.id = strings.TrimSuffix(base, filepath.Ext(base))
	}
	s.info = newOllamaModelInfo(cfg.Model)
	s.metrics = newMetrics(s)
	if s.tmpl == nil && cfg.Tokenizer != nil {
		s.tmpl = Plain{cfg.Tokenizer}
	}
	be, err := newBatched(cfg.Model, cfg.Parallel, engine.Options{Threads: cfg.Threads, CacheK: cfg.CacheK, CacheV: cfg.CacheV})
	if err != nil {
		return nil, err
	}
	var b backend = be
	if wrap != nil {
		b = wrap(be)
	}
	cacheRAM := int64(cfg.CacheRAM) << 20
	if cfg.CacheRAM < 0 {
		cacheRAM = -1
	}
	s.sched = newScheduler(b, cfg.Parallel, cacheRAM)
	return s, nil
}

// Limits describes the bounds a request must fit (logged at start).
func (s *Server) Limits() string { return s.lim.String() }

// ModelID is the name clients pass as "model".
func (s *Server) ModelID() string { return s.id }

// TemplateName says which chat template the server renders with.
func (s *Server) TemplateName() string {
	if s.tmpl == nil {
		return "none (the file has no tokenizer: chat is refused)"
	}
	return s.tmpl.Name()
}

// Close stops the scheduler and the engines; requests still waiting fail.
func (s *Server) Close() {
	s.draining.Store(true)
	s.sched.close()
}

// ErrDrainAborted is Serve's answer when abort ends a drain early: the
// requests still in flight were cut off.
var ErrDrainAborted = errors.New("serve: drain aborted, requests in flight were cut off")

// Serve answers on ln until ctx is done, then drains: it stops accepting,
// lets every in-flight request finish (streams and queued requests
// included) and returns nil — unless abort is done first, or the drain
// outlasts Config.DrainTimeout, which closes the remaining connections and
// returns ErrDrainAborted. The caller still closes the Server.
func (s *Server) Serve(ctx, abort context.Context, ln net.Listener) error {
	hs := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: s.cfg.ReadTimeout, IdleTimeout: s.cfg.IdleTimeout,
		ErrorLog: log.New(s.cfg.Log, "serve: http: ", 0)}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(limitListener(ln, s.cfg.MaxConns)) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	s.draining.Store(true)
	abort, cancel := context.WithTimeout(abort, s.cfg.DrainTimeout)
	defer cancel()
	if err := hs.Shutdown(abort); err != nil {
		hs.Close()
		if abort.Err() != nil {
			return ErrDrainAborted
		}
		return err
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Handler routes the API.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	route := func(path, method string, h http.HandlerFunc) {
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			if r.Method != method {
				w.Header().Set("Allow", method)
				writeError(w, &apiError{Status: http.StatusMethodNotAllowed, Type: "invalid_request_error",
					Message: fmt.Sprintf("%s %s: use %s", r.Method, path, method)})
				return
			}
			rc := http.NewResponseController(w)
			rc.SetWriteDeadline(time.Now().Add(s.cfg.WriteTimeout))
			r.Body = http.MaxBytesReader(innermost(w), r.Body, s.lim.bodyBytes)
			h(w, r)
		})
	}
	route("/health", http.MethodGet, s.health)
	route("/v1/models", http.MethodGet, s.models)
	route("/v1/chat/completions", http.MethodPost, s.chat)
	route("/v1/completions", http.MethodPost, s.completions)
	s.routeOps(route)
	route("/v1/models/{id}", http.MethodGet, func(w http.ResponseWriter, r *http.Request) {
		if !s.acceptsModel(r.PathValue("id")) {
			writeError(w, s.unknownModel(r.PathValue("id")))
			return
		}
		writeJSON(w, http.StatusOK, s.modelCard(r.PathValue("id")))
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, &apiError{Status: http.StatusNotFound, Type: "invalid_request_error", Code: strp("not_found"),
			Message: fmt.Sprintf("no route %s %s", r.Method, r.URL.Path)})
	})
	return s.guard(mux)
}

func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	status, code := "ok", http.StatusOK
	if s.draining.Load() {
		status, code = "shutting down", http.StatusServiceUnavailable
	}
	writeJSON(w, code, map[string]any{"status": status, "model": s.id, "slots": s.cfg.Parallel,
		"slots_busy": s.sched.busy.Load(), "queued": s.sched.queued(), "queue": s.cfg.Queue})
}

type modelCard struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

func (s *Server) modelCard(id string) modelCard {
	return modelCard{ID: id, Object: "model", Created: s.created, OwnedBy: "cflow"}
}

func (s *Server) models(w http.ResponseWriter, r *http.Request) {
	var cards []modelCard
	for _, id := range s.ids() {
		cards = append(cards, s.modelCard(id))
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": cards})
}

// ids are the model's names: the id, then the further aliases.
func (s *Server) ids() []string {
	out := []string{s.id}
	for _, a := range s.cfg.Aliases {
		if a != s.id {
			out = append(out, a)
		}
	}
	return out
}

// acceptsModel says whether a request may name the model so: one of its
// ids, or any name with AnyModel.
func (s *Server) acceptsModel(name string) bool {
	if s.cfg.AnyModel || name == s.id {
		return true
	}
	for _, a := range s.cfg.Aliases {
		if a == name {
			return true
		}
	}
	return false
}

func (s *Server) unknownModel(name string) *apiError {
	return &apiError{Status: http.StatusNotFound, Type: "invalid_request_error", Param: strp("model"), Code: strp("model_not_found"),
		Message: fmt.Sprintf("model %q does not exist; this server serves %q", name, s.id)}
}

// checkModel accepts the served model's id (or none).
func (s *Server) checkModel(name string) *apiError {
	if name != "" && !s.acceptsModel(name) {
		return s.unknownModel(name)
	}
	return nil
}

func randomSeed() uint64 { return rand.Uint64() }

package serve

import (
	"net/http"
	"time"
)

// DefaultKeepAlive is how often a stream still waiting for its first
// token (queued, or its prompt being fed) gets an SSE comment.
const DefaultKeepAlive = 5 * time.Second

// keepAlive sends ": keep-alive" comments on a stream until its first
// token, so a proxy or client that drops idle streams waits through a
// long prefill (llama-server's and OpenAI's servers send the same
// comments); SSE parsers skip them.
type keepAlive struct {
	t *time.Ticker
	C <-chan time.Time // nil when keep-alives are off
}

func (s *Server) newKeepAlive() keepAlive {
	if s.cfg.KeepAlive < 0 {
		return keepAlive{}
	}
	d := s.cfg.KeepAlive
	if d == 0 {
		d = DefaultKeepAlive
	}
	t := time.NewTicker(d)
	return keepAlive{t: t, C: t.C}
}

func (k *keepAlive) stop() {
	if k.t != nil {
		k.t.Stop()
		k.t, k.C = nil, nil
	}
}

// send writes one comment, unless the reply has its first token (then
// it stops: tokens keep the stream alive from there).
func (k *keepAlive) send(w http.ResponseWriter, rp *reply) error {
	if rp.completion > 0 {
		k.stop()
		return nil
	}
	rp.deadline()
	if _, err := w.Write([]byte(": keep-alive\n\n")); err != nil {
		return err
	}
	return rp.rc.Flush()
}

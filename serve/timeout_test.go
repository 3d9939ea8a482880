package serve

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// stallListener hands out connections that, when stall says so for the
// connection's index, stop taking bytes after the first limit: a client
// that stopped reading once the socket buffers filled. Their writes block
// until the write deadline, as a full socket's do.
type stallListener struct {
	net.Listener
	n     atomic.Int32
	stall func(i int) bool
	limit int
}

func (l *stallListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	i := int(l.n.Add(1)) - 1
	if l.stall == nil || !l.stall(i) {
		return c, nil
	}
	return &stallConn{Conn: c, left: l.limit}, nil
}

type stallConn struct {
	net.Conn
	mu       sync.Mutex
	left     int
	deadline time.Time
}

func (c *stallConn) SetWriteDeadline(t time.Time) error {
	c.mu.Lock()
	c.deadline = t
	c.mu.Unlock()
	return c.Conn.SetWriteDeadline(t)
}

func (c *stallConn) SetDeadline(t time.Time) error {
	c.mu.Lock()
	c.deadline = t
	c.mu.Unlock()
	return c.Conn.SetDeadline(t)
}

func (c *stallConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	n := min(len(p), c.left)
	c.left -= n
	d := c.deadline
	c.mu.Unlock()
	if n > 0 {
		if w, err := c.Conn.Write(p[:n]); err != nil {
			return w, err
		}
	}
	if n == len(p) {
		return n, nil
	}
	if d.IsZero() {
		d = time.Now().Add(time.Hour)
	}
	time.Sleep(time.Until(d))
	return n, os.ErrDeadlineExceeded
}

// served is a Server answering on a loopback listener through Serve (the
// path cflowc serve takes: timeouts, connection limit, drain).
type served struct {
	s      *Server
	addr   string
	drain  context.CancelFunc
	result chan error
}

func serveLoopback(t *testing.T, cfg Config, wrapBackend func(backend) backend, wrapLn func(net.Listener) net.Listener) *served {
	t.Helper()
	m, tk := demoModel(t)
	cfg.Model, cfg.Tokenizer, cfg.ModelID, cfg.Threads = m, tk, "demo", 1
	s, err := newServer(cfg, wrapBackend)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if wrapLn != nil {
		ln = wrapLn(ln)
	}
	ctx, drain := context.WithCancel(context.Background())
	sv := &served{s: s, addr: addr, drain: drain, result: make(chan error, 1)}
	go func() { sv.result <- s.Serve(ctx, context.Background(), ln) }()
	t.Cleanup(func() {
		drain()
		select {
		case <-sv.result:
		case <-time.After(10 * time.Second):
			t.Error("Serve did not return")
		}
		s.Close()
	})
	return sv
}

// slowBody starts a request whose body arrives a byte every 50 ms; it
// returns when the server answers or drops the connection, with what it
// read and how long that took.
func slowBody(addr string) (string, time.Duration, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return "", 0, err
	}
	defer c.Close()
	t0 := time.Now()
	if _, err := io.WriteString(c, "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"); err != nil {
		return "", 0, err
	}
	go func() {
		for {
			time.Sleep(50 * time.Millisecond)
			if _, err := c.Write([]byte(" ")); err != nil {
				return
			}
		}
	}()
	b, _ := io.ReadAll(c)
	return string(b), time.Since(t0), nil
}

// TestSlowBodyDropped: a client sending its body a byte at a time is
// answered 408 and dropped at ReadTimeout, not held for as long as it
// keeps sending.
func TestSlowBodyDropped(t *testing.T) {
	sv := serveLoopback(t, Config{Parallel: 1, ReadTimeout: 300 * time.Millisecond}, nil, nil)
	out, took, err := slowBody(sv.addr)
	if err != nil {
		t.Fatal(err)
	}
	if took > 3*time.Second || !strings.HasPrefix(out, "HTTP/1.1 408") {
		t.Fatalf("slow body: after %v: %q, want a 408 near 300 ms", took, out)
	}
}

// TestIdleAndConnLimit: an idle keep-alive connection is closed at
// IdleTimeout; with MaxConns stalled connections (sending nothing) new
// clients wait in the backlog, are not refused, and are served once the
// stalled ones time out.
func TestIdleAndConnLimit(t *testing.T) {
	sv := serveLoopback(t, Config{Parallel: 1, ReadTimeout: 300 * time.Millisecond, IdleTimeout: 300 * time.Millisecond, MaxConns: 3}, nil, nil)
	c, err := net.Dial("tcp", sv.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	t0 := time.Now()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := br.ReadByte(); err != io.EOF || time.Since(t0) > 2*time.Second {
		t.Fatalf("idle keep-alive connection: %v after %v, want EOF near 300 ms", err, time.Since(t0))
	}
	var stalled []net.Conn
	for range 3 {
		c, err := net.Dial("tcp", sv.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		stalled = append(stalled, c)
	}
	time.Sleep(50 * time.Millisecond)
	t0 = time.Now()
	code, _ := getJSON(t, "http://"+sv.addr+"/health")
	if took := time.Since(t0); code != 200 || took > 3*time.Second {
		t.Fatalf("a client behind %d stalled connections: %d after %v", len(stalled), code, took)
	}
}

// TestNonReadingStreamFreesSlot: a stream client that stops reading is
// dropped at WriteTimeout and its slot freed, not held while the model
// generates into a full socket.
func TestNonReadingStreamFreesSlot(t *testing.T) {
	g := &gate{open: make(chan struct{})}
	g.delay.Store(int64(20 * time.Millisecond)) // 200 tokens: 4 s
	close(g.open)
	sv := serveLoopback(t, Config{Parallel: 1, WriteTimeout: 300 * time.Millisecond}, func(b backend) backend { g.backend = b; return g },
		func(ln net.Listener) net.Listener {
			return &stallListener{Listener: ln, stall: func(int) bool { return true }, limit: 400}
		})
	c, err := net.Dial("tcp", sv.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	body := `{"prompt":"Once","max_tokens":200,"stream":true}`
	io.WriteString(c, "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: "+strconv.Itoa(len(body))+"\r\n\r\n"+body)
	until(t, "the stream to take the slot", func() bool { return sv.s.sched.busy.Load() == 1 })
	t0 := time.Now()
	until(t, "the slot to be freed", func() bool { return sv.s.sched.busy.Load() == 0 && sv.s.gate.n.Load() == 0 })
	if took := time.Since(t0); took > 3*time.Second { // generating all 200 tokens takes 4 s
		t.Fatalf("the non-reading client held its slot %v", took)
	}
}

// TestDrainWithStalledClients: SIGTERM's drain (Serve's context) finishes
// within its bound while a slow-body client and a non-reading stream
// client are connected: the timeouts drop them.
func TestDrainWithStalledClients(t *testing.T) {
	g := &gate{open: make(chan struct{})}
	g.delay.Store(int64(20 * time.Millisecond))
	close(g.open)
	sv := serveLoopback(t, Config{Parallel: 2, ReadTimeout: 400 * time.Millisecond, WriteTimeout: 400 * time.Millisecond, DrainTimeout: 5 * time.Second},
		func(b backend) backend { g.backend = b; return g },
		func(ln net.Listener) net.Listener {
			return &stallListener{Listener: ln, stall: func(i int) bool { return i == 0 }, limit: 400}
		})
	c, err := net.Dial("tcp", sv.addr) // connection 0: stalls
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	body := `{"prompt":"Once","max_tokens":200,"stream":true}`
	io.WriteString(c, "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: "+strconv.Itoa(len(body))+"\r\n\r\n"+body)
	until(t, "the stream to take a slot", func() bool { return sv.s.sched.busy.Load() == 1 })
	slow := make(chan string, 1)
	go func() { out, _, _ := slowBody(sv.addr); slow <- out }()
	time.Sleep(100 * time.Millisecond)
	t0 := time.Now()
	sv.drain()
	select {
	case err := <-sv.result:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the drain did not finish within 5 s")
	}
	if took := time.Since(t0); took > 4*time.Second {
		t.Errorf("drain took %v with stalled clients (timeouts 400 ms)", took)
	}
	sv.result <- nil // for the cleanup
	if out := <-slow; strings.HasPrefix(out, "HTTP/1.1 5") {
		t.Errorf("the slow-body client got %q", out)
	}
}

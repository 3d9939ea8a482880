package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"github.com/cflow-dev/cflow/cflowfmt"
	"github.com/cflow-dev/cflow/cflowfmt/tokmeta"
	"github.com/cflow-dev/cflow/chat"
	"github.com/cflow-dev/cflow/engine"
	"github.com/cflow-dev/cflow/serve"
	"github.com/cflow-dev/cflow/tokenizer"
	"github.com/urfave/cli/v2"
)

func init() {
	commands = append(commands, &cli.Command{
		Name:      "serve",
		Usage:     "an OpenAI-compatible HTTP server (chat and text completions, streaming) over one model file",
		ArgsUsage: "FILE",
		Description: "Serves POST /v1/chat/completions, POST /v1/completions, GET /v1/models and GET /health.\n" +
			"Also the Ollama API (/api/chat, /api/generate, /api/tags, /api/show, /api/ps, /api/version),\n" +
			"POST /tokenize, /detokenize, /apply-template and GET /metrics (docs/SERVING.md).\n" +
			"Up to --parallel requests decode together (each with its own KV cache of --ctx positions);\n" +
			"--queue more wait for a slot, beyond that the server answers 429. SIGTERM or SIGINT stops\n" +
			"accepting, lets in-flight requests finish, then exits 0 (a second signal, or --drain-timeout,\n" +
			"cuts them off, exit 1). A request must fit --ctx by its size alone (body, messages, prompt bytes;\n" +
			"the bounds are printed at start). Point an OpenAI client at " +
			"http://HOST:PORT/v1 (with a key of --api-key when any is given).",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "host", Value: "127.0.0.1", Usage: "address to listen on"},
			&cli.IntFlag{Name: "port", Value: 8080, Usage: "port to listen on (0: any free port, printed)"},
			&cli.IntFlag{Name: "parallel", Aliases: []string{"np"}, Value: 4, Usage: "sequences decoded together"},
			&cli.IntFlag{Name: "ctx", Aliases: []string{"c"}, Usage: "positions per sequence (0: the model's maximum)"},
			&cli.IntFlag{Name: "threads", Aliases: []string{"t"}, Value: runtime.NumCPU(), Usage: "decode threads"},
			&cli.IntFlag{Name: "cache-ram", Value: defaultCacheRAM, Usage: "MiB of KV cache idle slots keep for the prompt cache (0: none, -1: no bound)"},
			&cli.IntFlag{Name: "queue", Usage: "requests that may wait for a slot (0: 4 × --parallel)"},
			&cli.StringSliceFlag{Name: "alias", Usage: "model id clients pass as \"model\" (default: the file's base name); repeat for more names"},
			&cli.BoolFlag{Name: "any-model", Usage: "accept every model name clients send"},
			&cli.StringSliceFlag{Name: "api-key", EnvVars: []string{"CFLOW_API_KEY"}, Usage: "require this bearer key (repeatable; /health is exempt)"},
			&cli.StringFlag{Name: "api-key-file", Usage: "require one of the keys in this file (one a line)"},
			&cli.StringSliceFlag{Name: "cors-origin", Usage: "let browsers call from this origin (repeatable; * for any)"},
			&cli.DurationFlag{Name: "read-timeout", Value: serve.DefaultReadTimeout, Usage: "bound on reading one request's headers and body"},
			&cli.DurationFlag{Name: "write-timeout", Value: serve.DefaultWriteTimeout, Usage: "bound on each write of a response (each stream chunk)"},
			&cli.DurationFlag{Name: "idle-timeout", Value: serve.DefaultIdleTimeout, Usage: "close a keep-alive connection idle this long"},
			&cli.IntFlag{Name: "max-conns", Value: serve.DefaultMaxConns, Usage: "open connections at most (more wait in the listen backlog)"},
			&cli.DurationFlag{Name: "drain-timeout", Value: serve.DefaultDrainTimeout, Usage: "after SIGTERM, cut requests still in flight after this long (exit 1)"},
		}, cacheTypeFlags(engine.KVF16)...),
		Action: runServe,
	})
}

// defaultCacheRAM is --cache-ram's default, llama-server's.
const defaultCacheRAM = 8192

// maxParallel bounds --parallel: each slot holds a KV cache of --ctx
// positions.
const maxParallel = 256

func runServe(c *cli.Context) error {
	var kv engine.Options // the cache types, read with the other flags
	if err := checkServeFlags(c, &kv); err != nil {
		return err
	}
	m, err := openRunModel(c.Args().First())
	if err != nil {
		return cli.Exit(err.Error(), exitUsage)
	}
	defer m.Close()
	if max := int(m.Header.MaxSeqLen); c.Int("ctx") > max || c.IsSet("ctx") && c.Int("ctx") < 2 {
		return cli.Exit(fmt.Sprintf("serve: --ctx %d outside [2, %d] (the model's maximum sequence length)", c.Int("ctx"), max), exitUsage)
	}
	tk, err := tokmeta.Load(m.Meta, int(m.Header.VocabSize))
	if err != nil && !errors.Is(err, tokenizer.ErrNoTokenizer) {
		return cli.Exit("serve: "+err.Error(), exitUsage)
	}
	// One P beyond the decode threads for the HTTP side: with none, a
	// handler writing a chunk waits for the Go scheduler to preempt a
	// polling pool worker, stalling the matvec it was part of (measured:
	// half the decode rate of run at --threads = CPUs).
	if t := c.Int("threads") + 1; t > runtime.GOMAXPROCS(0) {
		runtime.GOMAXPROCS(t)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(c.String("host"), strconv.Itoa(c.Int("port"))))
	if err != nil {
		return cli.Exit("serve: "+err.Error(), exitUsage)
	}
	tmpl, err := serveTemplate(m.Meta, int(m.Header.VocabSize), tk)
	if err != nil {
		ln.Close()
		return cli.Exit("serve: "+err.Error(), exitUsage)
	}
	keys, err := apiKeys(c)
	if err != nil {
		ln.Close()
		return cli.Exit("serve: "+err.Error(), exitUsage)
	}
	var id string
	aliases := c.StringSlice("alias")
	if len(aliases) > 0 {
		id = aliases[0]
	}
	s, err := serve.New(serve.Config{CacheK: kv.CacheK, CacheV: kv.CacheV, Model: m, ModelID: id, Aliases: aliases, AnyModel: c.Bool("any-model"),
		APIKeys: keys, CORSOrigins: c.StringSlice("cors-origin"), Tokenizer: tk, Template: tmpl, Parallel: c.Int("parallel"),
		Ctx: c.Int("ctx"), Threads: c.Int("threads"), Queue: c.Int("queue"), CacheRAM: c.Int("cache-ram"), Log: os.Stderr,
		ReadTimeout: c.Duration("read-timeout"), WriteTimeout: c.Duration("write-timeout"), IdleTimeout: c.Duration("idle-timeout"),
		MaxConns: c.Int("max-conns"), DrainTimeout: c.Duration("drain-timeout")})
	if err != nil {
		ln.Close()
		return cli.Exit("serve: "+err.Error(), exitUsage)
	}
	defer s.Close()
	fmt.Fprintf(os.Stderr, "serving %s as %q on http://%s/v1 (%d parallel, chat template: %s; requests: %s); SIGTERM drains and exits\n",
		m.Path, s.ModelID(), ln.Addr(), c.Int("parallel"), s.TemplateName(), s.Limits())
	return serveUntilSignal(s, ln)
}

// checkServeFlags refuses, before the model is opened, the flag values no
// server can run with, and reads the KV cache types into kv.
func checkServeFlags(c *cli.Context, kv *engine.Options) error {
	if c.NArg() != 1 {
		return cli.Exit("serve: give one model FILE", exitUsage)
	}
	switch {
	case c.Int("parallel") < 1 || c.Int("parallel") > maxParallel:
		return cli.Exit(fmt.Sprintf("serve: --parallel %d outside 1..%d", c.Int("parallel"), maxParallel), exitUsage)
	case c.Int("ctx") < 0:
		return cli.Exit("serve: --ctx must be ≥ 0", exitUsage)
	case c.Int("queue") < 0 || c.Int("queue") > 1<<16:
		return cli.Exit(fmt.Sprintf("serve: --queue %d outside 0..%d", c.Int("queue"), 1<<16), exitUsage)
	case c.Int("cache-ram") < -1 || c.Int("cache-ram") > 1<<30:
		return cli.Exit(fmt.Sprintf("serve: --cache-ram %d outside -1..%d (MiB; -1: no bound)", c.Int("cache-ram"), 1<<30), exitUsage)
	case c.Int("port") < 0 || c.Int("port") > 65535:
		return cli.Exit("serve: --port must be in [0, 65535]", exitUsage)
	case c.Int("max-conns") < 1 || c.Int("max-conns") > 1<<20:
		return cli.Exit(fmt.Sprintf("serve: --max-conns %d outside 1..%d", c.Int("max-conns"), 1<<20), exitUsage)
	}
	for _, f := range []string{"read-timeout", "write-timeout", "idle-timeout", "drain-timeout"} {
		if c.Duration(f) <= 0 {
			return cli.Exit(fmt.Sprintf("serve: --%s %v: must be > 0", f, c.Duration(f)), exitUsage)
		}
	}
	if err := cacheTypes(c, "serve", kv); err != nil {
		return err
	}
	return checkThreads("serve", c.Int("threads"))
}

// apiKeys are --api-key's keys (and CFLOW_API_KEY's) with --api-key-file's,
// one a line (blank lines skipped); an empty key is refused.
func apiKeys(c *cli.Context) ([]string, error) {
	keys := c.StringSlice("api-key")
	if f := c.String("api-key-file"); f != "" {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("--api-key-file: %v", err)
		}
		for _, l := range strings.Split(string(b), "\n") {
			if l = strings.TrimSpace(l); l != "" {
				keys = append(keys, l)
			}
		}
		if len(keys) == 0 {
			return nil, fmt.Errorf("--api-key-file %s: no key in it", f)
		}
	}
	for _, k := range keys {
		if strings.TrimSpace(k) == "" {
			return nil, fmt.Errorf("--api-key: an empty key")
		}
	}
	return keys, nil
}

// serveUntilSignal serves on ln until SIGTERM or SIGINT, then drains.
func serveUntilSignal(s *serve.Server, ln net.Listener) error {
	// The first SIGTERM/SIGINT drains; a second one cuts the drain short.
	ctx, drain := context.WithCancel(context.Background())
	abort, cut := context.WithCancel(context.Background())
	defer drain()
	defer cut()
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, syscall.SIGTERM, os.Interrupt)
	defer signal.Stop(sig)
	go func() {
		select {
		case <-sig:
		case <-abort.Done():
			return
		}
		fmt.Fprintln(os.Stderr, "serve: draining: requests in flight finish (signal again to cut them off)")
		drain()
		select {
		case <-sig:
			cut()
		case <-abort.Done():
		}
	}()
	if err := s.Serve(ctx, abort, ln); err != nil {
		if errors.Is(err, serve.ErrDrainAborted) {
			return cli.Exit(err.Error(), exitFail)
		}
		return cli.Exit("serve: "+err.Error(), exitError)
	}
	fmt.Fprintln(os.Stderr, "serve: drained, exiting")
	return nil
}

// serveTemplate is the file's chat template as the server's ChatTemplate,
// nil when the file has no tokenizer or no template (the server then
// refuses chat, or joins the messages: serve.Plain).
func serveTemplate(md *cflowfmt.Metadata, vocab int, tk tokenizer.Tokenizer) (serve.ChatTemplate, error) {
	if tk == nil {
		return nil, nil
	}
	cm, err := chat.OpenModel(md, vocab)
	if errors.Is(err, chat.ErrNoTemplate) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return fileTemplate{cm}, nil
}

// fileTemplate renders with the file's template and tokenizes as chat
// does (apply_chat_template: special tokens matched, BOS from the template).
type fileTemplate struct{ cm *chat.Model }

func (fileTemplate) Name() string { return "the file's own (tokenizer_config.json chat_template)" }

// Render implements serve.TemplateRenderer (POST /apply-template).
func (f fileTemplate) Render(msgs []serve.Message) (string, error) {
	cms := make([]chat.Message, len(msgs))
	for i, m := range msgs {
		cms[i] = chat.Message{Role: m.Role, Content: m.Content}
	}
	return f.cm.Template.Render(cms, f.cm.Options)
}

func (f fileTemplate) Prompt(msgs []serve.Message, limit int) ([]int, error) {
	cms := make([]chat.Message, len(msgs))
	for i, m := range msgs {
		cms[i] = chat.Message{Role: m.Role, Content: m.Content}
	}
	return f.cm.PromptLimit(cms, limit)
}

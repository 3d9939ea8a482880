package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"

	"github.com/cflow-dev/cflow/cflowfmt"
	"github.com/cflow-dev/cflow/chat"
	"github.com/cflow-dev/cflow/engine"
	"github.com/cflow-dev/cflow/generate"
	"github.com/urfave/cli/v2"
	"golang.org/x/term"
)

func init() {
	commands = append(commands, &cli.Command{
		Name:      "chat",
		Usage:     "multi-turn chat on the model's chat template, streaming each reply",
		ArgsUsage: "FILE [--system TEXT]",
		Description: "Reads one user turn per line from stdin (a terminal or a pipe), renders the whole\n" +
			"conversation with the file's chat template (as transformers' apply_chat_template, with\n" +
			"add_generation_prompt) and streams the reply until the model's end-of-turn or EOS token or\n" +
			"--max-tokens. /reset forgets the conversation (the --system message stays), /exit or end of\n" +
			"input quits. The conversation stays in the engine: a turn feeds only the tokens its prompt adds.\n" +
			"--json prints one {\"user\", \"reply\", \"prompt_tokens\", \"reused_tokens\", \"finish\"} object per turn.",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "system", Usage: "system message that opens the conversation"},
			&cli.IntFlag{Name: "max-tokens", Aliases: []string{"n"}, Value: 512, Usage: "reply tokens at most (≥ 1)"},
			&cli.IntFlag{Name: "threads", Aliases: []string{"t"}, Value: runtime.NumCPU(), Usage: "decode threads"},
			&cli.BoolFlag{Name: "json", Usage: "one JSON object per turn instead of streamed text"},
		}, append(samplingFlags(), cacheTypeFlags(engine.KVF16)...)...),
		Action: runChat,
	})
}

// chatPrompt is run --chat's prompt: the template applied to one user
// turn (after a system turn when system is set).
func chatPrompt(md *cflowfmt.Metadata, vocab int, system, user string) ([]int, error) {
	cm, err := chat.OpenModel(md, vocab)
	if err != nil {
		return nil, err
	}
	var msgs []chat.Message
	if system != "" {
		msgs = append(msgs, chat.Message{Role: "system", Content: system})
	}
	return cm.Prompt(append(msgs, chat.Message{Role: "user", Content: user}))
}

func runChat(c *cli.Context) error {
	if c.NArg() != 1 {
		return cli.Exit("chat: give one model FILE", exitUsage)
	}
	if err := checkThreads("chat", c.Int("threads")); err != nil {
		return err
	}
	defer onOneCPU(c.Int("threads"))()
	m, err := openRunModel(c.Args().First())
	if err != nil {
		return cli.Exit("chat: "+err.Error(), exitUsage)
	}
	defer m.Close()
	cm, err := chat.OpenModel(m.Meta, int(m.Header.VocabSize))
	if err != nil {
		return cli.Exit("chat: "+err.Error(), exitUsage)
	}
	if t := c.Int("threads"); t > runtime.GOMAXPROCS(0) {
		runtime.GOMAXPROCS(t)
	}
	eo := engine.Options{Threads: c.Int("threads")}
	if err := cacheTypes(c, "chat", &eo); err != nil {
		return err
	}
	e, err := engine.New(m, eo)
	if err != nil {
		return cli.Exit("chat: "+err.Error(), exitUsage)
	}
	defer e.Close()
	conv := chat.NewConversation(cm, e, c.String("system"), int(m.Header.MaxSeqLen), int(m.Header.VocabSize))
	params, chosen := samplingParams(c)
	out := bufio.NewWriter(os.Stdout)
	opt := chat.TurnOptions{MaxTokens: c.Int("max-tokens"), Params: params}
	if !c.Bool("json") {
		opt.OnText = func(b []byte) error { out.Write(b); return out.Flush() }
	}
	// Validate the flags once, before any input is read.
	if err := conv.Validate(opt); err != nil {
		return flagError("chat", err)
	}
	if chosen && !params.Greedy() {
		fmt.Fprintf(os.Stderr, "seed %d (pass --seed %d to repeat)\n", params.Seed, params.Seed)
	}
	ctx := c.Context
	if ctx == nil {
		ctx = context.Background()
	}
	return chatLoop(ctx, conv, opt, c.Bool("json"), out)
}

// chatLoop reads one user turn per line until /exit or the end of input,
// printing each reply (streamed by opt.OnText, or as one JSON object).
func chatLoop(ctx context.Context, conv *chat.Conversation, opt chat.TurnOptions, asJSON bool, out *bufio.Writer) error {
	interactive := term.IsTerminal(int(os.Stdin.Fd()))
	in := bufio.NewReaderSize(os.Stdin, 1<<16)
	for {
		if interactive {
			fmt.Fprint(os.Stderr, "> ")
		}
		line, err := in.ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return cli.Exit("chat: "+err.Error(), exitError)
		}
		if line == "" && err != nil {
			return nil
		}
		user := strings.TrimRight(line, "\r\n")
		switch strings.TrimSpace(user) {
		case "":
			continue
		case "/exit", "/quit":
			return nil
		case "/reset":
			conv.Reset()
			if interactive {
				fmt.Fprintln(os.Stderr, "(conversation reset)")
			}
			continue
		}
		if perr := chatTurn(ctx, conv, user, opt, asJSON, out); perr != nil {
			return perr
		}
		if err != nil { // input ended without a newline after this turn
			return nil
		}
	}
}

// chatTurn runs one turn and prints its end: a newline after streamed
// text, or the turn's JSON object.
func chatTurn(ctx context.Context, conv *chat.Conversation, user string, opt chat.TurnOptions, asJSON bool, out *bufio.Writer) error {
	t, err := conv.Say(ctx, user, opt)
	var full *chat.ContextFullError
	var bad *chat.PromptError
	var param *generate.ParamError
	switch {
	case errors.As(err, &full):
		fmt.Fprintf(os.Stderr, "chat: %v; /reset to start over\n", err)
		return nil
	case errors.As(err, &bad):
		return cli.Exit("chat: "+err.Error(), exitUsage)
	case errors.As(err, &param):
		return flagError("chat", err)
	case err != nil:
		return lateExit("chat", err)
	}
	if asJSON {
		b, jerr := json.Marshal(struct {
			User         string `json:"user"`
			Reply        string `json:"reply"`
			PromptTokens int    `json:"prompt_tokens"`
			Reused       int    `json:"reused_tokens"`
			Finish       string `json:"finish"`
		}{user, t.Reply, t.PromptTokens, t.Reused, t.Finish})
		if jerr != nil {
			return cli.Exit(jerr.Error(), exitError)
		}
		out.Write(append(b, '\n'))
	} else {
		out.WriteString("\n")
	}
	return out.Flush()
}

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
	"github.com/cflow-dev/cflow/tokenizer"
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
		}, samplingFlags()...),
		Action: runChat,
	})
}

// chatModel is what a chat turn needs from the model file.
type chatModel struct {
	tk   tokenizer.Tokenizer
	tpl  *chat.Template
	opt  chat.Options
	stop []int
}

func openChat(md *cflowfmt.Metadata, vocab int) (*chatModel, error) {
	tk, err := tokenizer.FromMetadata(md, vocab)
	if err != nil {
		return nil, err
	}
	tpl, opt, err := chat.FromMetadata(md)
	if err != nil {
		return nil, err
	}
	return &chatModel{tk: tk, tpl: tpl, opt: opt, stop: generate.StopIDs(tk)}, nil
}

// prompt renders msgs and tokenizes the text as apply_chat_template does
// (special tokens matched, no BOS added: the template writes bos_token).
func (cm *chatModel) prompt(msgs []chat.Message) ([]int, error) {
	text, err := cm.tpl.Render(msgs, cm.opt)
	if err != nil {
		return nil, err
	}
	return tokenizer.EncodeText(cm.tk, text, false)
}

// commonPrefix is the length of the longest common prefix of a and b.
func commonPrefix(a, b []int) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// chatPrompt is run --chat's prompt: the template applied to one user
// turn (after a system turn when system is set).
func chatPrompt(md *cflowfmt.Metadata, vocab int, system, user string) ([]int, error) {
	cm, err := openChat(md, vocab)
	if err != nil {
		return nil, err
	}
	var msgs []chat.Message
	if system != "" {
		msgs = append(msgs, chat.Message{Role: "system", Content: system})
	}
	return cm.prompt(append(msgs, chat.Message{Role: "user", Content: user}))
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
	h := &m.Header
	cm, err := openChat(m.Meta, int(h.VocabSize))
	if err != nil {
		return cli.Exit("chat: "+err.Error(), exitUsage)
	}
	params, chosen := samplingParams(c)
	// Validate the flags once, before any input is read.
	if _, err := generate.NewSequence(generate.Request{Prompt: []int{0}, MaxTokens: c.Int("max-tokens"), Ctx: int(h.MaxSeqLen),
		Params: params, StopIDs: cm.stop, Tokenizer: cm.tk}, int(h.VocabSize), int(h.MaxSeqLen)); err != nil {
		return flagError("chat", err)
	}
	if t := c.Int("threads"); t > runtime.GOMAXPROCS(0) {
		runtime.GOMAXPROCS(t)
	}
	e, err := engine.New(m, engine.Options{Threads: c.Int("threads")})
	if err != nil {
		return cli.Exit("chat: "+err.Error(), exitUsage)
	}
	defer e.Close()
	if chosen && !params.Greedy() {
		fmt.Fprintf(os.Stderr, "seed %d (pass --seed %d to repeat)\n", params.Seed, params.Seed)
	}
	interactive := term.IsTerminal(int(os.Stdin.Fd()))
	var history []chat.Message
	if c.IsSet("system") {
		history = append(history, chat.Message{Role: "system", Content: c.String("system")})
	}
	system := len(history)
	var fed []int
	out := bufio.NewWriter(os.Stdout)
	in := bufio.NewReaderSize(os.Stdin, 1<<16)
	ctx := c.Context
	if ctx == nil {
		ctx = context.Background()
	}
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
			history = history[:system]
			if interactive {
				fmt.Fprintln(os.Stderr, "(conversation reset)")
			}
			continue
		}
		history = append(history, chat.Message{Role: "user", Content: user})
		prompt, perr := cm.prompt(history)
		if perr != nil {
			return cli.Exit("chat: "+perr.Error(), exitUsage)
		}
		if len(prompt) >= int(h.MaxSeqLen) {
			history = history[:len(history)-1]
			fmt.Fprintf(os.Stderr, "chat: the conversation is %d tokens, the model's context is %d; /reset to start over\n", len(prompt), h.MaxSeqLen)
			continue
		}
		// The engine keeps the conversation so far: when the new prompt
		// extends what it holds, only the new tokens are fed.
		keep := commonPrefix(fed, prompt)
		if keep < len(fed) || keep == len(prompt) || e.Pos() != len(fed) {
			e.Reset()
			fed, keep = nil, 0
		}
		seq, serr := generate.NewSequence(generate.Request{Prompt: prompt[keep:], MaxTokens: c.Int("max-tokens"), Ctx: int(h.MaxSeqLen) - keep,
			Params: params, StopIDs: cm.stop, Tokenizer: cm.tk, TopLogprobs: -1}, int(h.VocabSize), int(h.MaxSeqLen))
		if serr != nil {
			return flagError("chat", serr)
		}
		var reply []byte
		st, rerr := generate.Run(ctx, e, seq, generate.Options{OnToken: func(t generate.Token) error {
			reply = append(reply, t.Text...)
			if c.Bool("json") {
				return nil
			}
			out.Write(t.Text)
			return out.Flush()
		}})
		if rerr != nil {
			return cli.Exit("chat: "+rerr.Error(), exitError)
		}
		// What the engine now holds: the prompt and every generated token
		// but the last (reported, not fed).
		fed = append(fed[:0:0], prompt...)
		if g := seq.Generated(); len(g) > 0 {
			fed = append(fed, g[:len(g)-1]...)
		}
		// The reply as text, invalid UTF-8 replaced (as transformers'
		// decode does), is the assistant turn the next prompt renders.
		text := strings.ToValidUTF8(string(reply), "\uFFFD")
		history = append(history, chat.Message{Role: "assistant", Content: text})
		if c.Bool("json") {
			b, jerr := json.Marshal(struct {
				User         string `json:"user"`
				Reply        string `json:"reply"`
				PromptTokens int    `json:"prompt_tokens"`
				Reused       int    `json:"reused_tokens"`
				Finish       string `json:"finish"`
			}{user, text, len(prompt), keep, st.Reason})
			if jerr != nil {
				return cli.Exit(jerr.Error(), exitError)
			}
			out.Write(append(b, '\n'))
		} else {
			out.WriteString("\n")
		}
		out.Flush()
		if err != nil { // input ended without a newline after this turn
			return nil
		}
	}
}

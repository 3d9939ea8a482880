package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/cflow-dev/cflow/cflowfmt"
	"github.com/cflow-dev/cflow/cflowfmt/tokmeta"
	"github.com/cflow-dev/cflow/chat"
	"github.com/cflow-dev/cflow/gguf"
	"github.com/cflow-dev/cflow/internal/fileio"
	"github.com/cflow-dev/cflow/tokenizer"
	"github.com/urfave/cli/v2"
)

func init() {
	commands = append(commands, &cli.Command{
		Name:      "tokenize",
		Usage:     "token ids of a text (or a chat) under the model's tokenizer, or the text of ids",
		ArgsUsage: "FILE|FILE.gguf|ollama:NAME[:TAG] (--text TEXT.txt | --text - | --chat MESSAGES.json) [--json] [--no-special] [--detokenize]",
		Description: "FILE is a .cflow/.vflow model or a GGUF (llama.cpp's format; its tokenizer.ggml.* keys and\n" +
			"chat template, vocabulary-only files included). Prints the ids space-separated (no BOS added: the tokenization cflowc ppl scores), or with\n" +
			"--json {\"ids\": [...], \"bos\": N} (bos −1 when the tokenizer has none). Special tokens written in\n" +
			"the text (<|im_start|>, <start_of_turn>) are single tokens unless --no-special.\n" +
			"--chat renders a JSON list of {\"role\", \"content\"} messages with the file's chat template and\n" +
			"add_generation_prompt, as transformers' apply_chat_template does, and tokenizes the result;\n" +
			"--json then gives {\"text\": RENDERED, \"ids\": [...], \"bos\": N}.\n" +
			"--detokenize reads ids (space- or comma-separated, or a JSON list) from --text and prints\n" +
			"their text, special tokens included, as transformers decodes it: a character cut between ids\n" +
			"shows as U+FFFD, and spaces are cleaned up when tokenizer_config.json says so.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "text", Usage: "text file to tokenize, - for stdin"},
			&cli.StringFlag{Name: "chat", Usage: "JSON file of chat messages [{\"role\": ..., \"content\": ...}] to render and tokenize"},
			&cli.BoolFlag{Name: "json", Usage: "print JSON"},
			&cli.BoolFlag{Name: "no-special", Usage: "spell special tokens in the text out as ordinary text"},
			&cli.BoolFlag{Name: "detokenize", Usage: "--text holds ids: print their text"},
		},
		Action: runTokenize,
	})
}

func runTokenize(c *cli.Context) error {
	if c.NArg() != 1 {
		return cli.Exit("tokenize: give one model FILE", exitUsage)
	}
	if c.IsSet("text") == c.IsSet("chat") {
		return cli.Exit("tokenize: give exactly one of --text and --chat", exitUsage)
	}
	if c.Bool("detokenize") && c.IsSet("chat") {
		return cli.Exit("tokenize: --detokenize reads ids from --text, not --chat", exitUsage)
	}
	input, err := readInput(c.String("text") + c.String("chat"))
	if err != nil {
		return cli.Exit("tokenize: "+err.Error(), exitUsage)
	}
	md, vocab, err := tokenizerMetadata(c.Args().First())
	if err != nil {
		return cli.Exit("tokenize: "+err.Error(), exitUsage)
	}
	tk, err := tokmeta.Load(md, vocab)
	if err != nil {
		return cli.Exit("tokenize: "+err.Error(), exitUsage)
	}
	out := tokenizeOutput{BOS: tk.BOS(), IDs: []int{}}
	if c.Bool("detokenize") {
		return printDetokenized(c, tk, input, vocab)
	}
	text := string(input)
	if c.IsSet("chat") {
		if text, err = renderChatInput(md, input); err != nil {
			return err
		}
		out.Text = &text
	}
	ids, err := tokenizer.EncodeText(tk, text, c.Bool("no-special"))
	if err != nil {
		return cli.Exit("tokenize: "+err.Error(), exitUsage)
	}
	if ids != nil {
		out.IDs = ids
	}
	if c.Bool("json") {
		return printJSON(out)
	}
	var b strings.Builder
	for i, id := range out.IDs {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(strconv.Itoa(id))
	}
	fmt.Println(b.String())
	return nil
}

// tokenizerMetadata is the tokenizer metadata and vocabulary size of a
// model file: a .cflow/.vflow's own, or a GGUF's tokenizer.ggml.* keys as
// gguf translates them (vocabulary-only GGUFs included; ollama:NAME[:TAG]
// names one in ollama's store).
func tokenizerMetadata(path string) (*cflowfmt.Metadata, int, error) {
	if strings.HasPrefix(path, gguf.OllamaPrefix) {
		dir, err := gguf.OllamaModelsDir()
		if err != nil {
			return nil, 0, err
		}
		if path, err = gguf.ResolveOllama(path, dir); err != nil {
			return nil, 0, err
		}
	}
	if gguf.IsGGUF(path) {
		f, err := gguf.Open(path)
		if err != nil {
			return nil, 0, err
		}
		defer f.Close()
		return f.TokenizerMetadata()
	}
	m, err := openRunModel(path)
	if err != nil {
		return nil, 0, err
	}
	defer m.Close()
	return m.Meta, int(m.Header.VocabSize), nil
}

// readInput reads a file, or stdin for "-", bounded as every argument
// file is (fileio.MaxArgFileBytes).
func readInput(path string) ([]byte, error) {
	if path != "-" {
		return readArgFile(path)
	}
	b, err := io.ReadAll(io.LimitReader(os.Stdin, fileio.MaxArgFileBytes+1))
	if err == nil && len(b) > fileio.MaxArgFileBytes {
		err = fmt.Errorf("stdin: more than %d bytes", fileio.MaxArgFileBytes)
	}
	return b, err
}

// printJSON prints v on one line, "<" and ">" as themselves (special
// tokens stay readable).
func printJSON(v any) error {
	enc := json.NewEncoder(os.Stdout)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return cli.Exit(err.Error(), exitError)
	}
	return nil
}

// parseMessages reads [{"role", "content"}] or {"messages": [...]}.
func parseMessages(b []byte) ([]chat.Message, error) {
	var msgs []chat.Message
	if err := json.Unmarshal(b, &msgs); err != nil {
		var wrapped struct {
			Messages []chat.Message `json:"messages"`
		}
		if err2 := json.Unmarshal(b, &wrapped); err2 != nil || wrapped.Messages == nil {
			return nil, fmt.Errorf("want a JSON list of {\"role\", \"content\"} messages: %w", err)
		}
		msgs = wrapped.Messages
	}
	if len(msgs) == 0 {
		return nil, errors.New("no messages")
	}
	for i, m := range msgs {
		if m.Role == "" {
			return nil, fmt.Errorf("message %d has no role", i)
		}
	}
	return msgs, nil
}

// parseIDList reads ids separated by spaces/commas, or a JSON list, or
// tokenize --json's object.
func parseIDList(s string, vocab int) ([]int, error) {
	s = strings.TrimSpace(s)
	var ids []int
	switch {
	case strings.HasPrefix(s, "["):
		if err := json.Unmarshal([]byte(s), &ids); err != nil {
			return nil, err
		}
	case strings.HasPrefix(s, "{"):
		var o struct {
			IDs []int `json:"ids"`
		}
		if err := json.Unmarshal([]byte(s), &o); err != nil {
			return nil, err
		}
		ids = o.IDs
	default:
		for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' || r == '\t' || r == '\r' }) {
			v, err := strconv.Atoi(f)
			if err != nil {
				return nil, fmt.Errorf("%q is not a token id", f)
			}
			ids = append(ids, v)
		}
	}
	for _, id := range ids {
		if id < 0 || id >= vocab {
			return nil, fmt.Errorf("id %d outside the vocabulary of %d", id, vocab)
		}
	}
	return ids, nil
}

// tokenizeOutput is tokenize's --json object.
type tokenizeOutput struct {
	Text *string `json:"text,omitempty"`
	IDs  []int   `json:"ids"`
	BOS  int     `json:"bos"`
}

// printDetokenized prints the text of the ids in input (--detokenize).
func printDetokenized(c *cli.Context, tk tokenizer.Tokenizer, input []byte, vocab int) error {
	ids, err := parseIDList(string(input), vocab)
	if err != nil {
		return cli.Exit("tokenize: --detokenize: "+err.Error(), exitUsage)
	}
	text := tokenizer.Decode(tk, ids)
	if !c.Bool("json") {
		fmt.Print(text)
		return nil
	}
	return printJSON(tokenizeOutput{Text: &text, IDs: ids, BOS: tk.BOS()})
}

// renderChatInput renders --chat's messages with the file's template.
func renderChatInput(md *cflowfmt.Metadata, input []byte) (string, error) {
	msgs, err := parseMessages(input)
	if err != nil {
		return "", cli.Exit("tokenize: --chat: "+err.Error(), exitUsage)
	}
	tpl, opt, err := chat.FromMetadata(md)
	if err != nil {
		return "", cli.Exit("tokenize: "+err.Error(), exitUsage)
	}
	text, err := tpl.Render(msgs, opt)
	if err != nil {
		return "", cli.Exit("tokenize: "+err.Error(), exitUsage)
	}
	return text, nil
}

package chat

import (
	"context"
	"fmt"
	"strings"

	"github.com/cflow-dev/cflow/cflowfmt"
	"github.com/cflow-dev/cflow/cflowfmt/tokmeta"
	"github.com/cflow-dev/cflow/generate"
	"github.com/cflow-dev/cflow/tokenizer"
)

// Model is what rendering a conversation into token ids needs from a model
// file: its tokenizer, chat template, the template's options and the ids
// that end a turn. chat, run --chat, tokenize --chat and serve share it, so
// they all tokenize a conversation the same way.
type Model struct {
	Tokenizer tokenizer.Tokenizer
	Template  *Template
	Options   Options
	// StopIDs end a reply: EOS and the file's end-of-turn tokens.
	StopIDs []int
}

// OpenModel reads the tokenizer and chat template from a model file's
// metadata (vocab: the header's vocabulary size, which the tokenizer must
// fit).
func OpenModel(md *cflowfmt.Metadata, vocab int) (*Model, error) {
	tk, err := tokmeta.Load(md, vocab)
	if err != nil {
		return nil, err
	}
	tpl, opt, err := FromMetadata(md)
	if err != nil {
		return nil, err
	}
	return &Model{Tokenizer: tk, Template: tpl, Options: opt, StopIDs: generate.StopIDs(tk)}, nil
}

// Prompt renders msgs and tokenizes the text as apply_chat_template does
// (special tokens matched, no BOS added: the template writes bos_token).
func (m *Model) Prompt(msgs []Message) ([]int, error) { return m.PromptLimit(msgs, 0) }

// PromptLimit is Prompt that stops tokenizing once more than limit ids
// are out (limit ≤ 0: none; tokenizer.EncodeLimited), for a caller that
// refuses a prompt longer than limit anyway (the server, at ctx).
func (m *Model) PromptLimit(msgs []Message, limit int) ([]int, error) {
	text, err := m.Template.Render(msgs, m.Options)
	if err != nil {
		return nil, err
	}
	return tokenizer.EncodeLimited(m.Tokenizer, text, false, limit)
}

// Engine is what a conversation needs of a decode engine: generate's loop
// and a way to forget what it holds.
type Engine interface {
	generate.Engine
	Reset()
}

// Conversation is a multi-turn chat kept in one engine. The engine holds
// the conversation so far, so a turn whose prompt extends what was fed
// feeds only the tokens it adds (the chat REPL's prefix reuse).
type Conversation struct {
	model   *Model
	e       Engine
	ctx     int // the model's context, in tokens
	vocab   int
	history []Message
	system  int   // history[:system] survives Reset
	fed     []int // what the engine holds
}

// NewConversation starts a conversation on e, opened by a system message
// when system is not "". ctx and vocab are the model header's.
func NewConversation(m *Model, e Engine, system string, ctx, vocab int) *Conversation {
	c := &Conversation{model: m, e: e, ctx: ctx, vocab: vocab}
	if system != "" {
		c.history = append(c.history, Message{Role: "system", Content: system})
	}
	c.system = len(c.history)
	return c
}

// Reset forgets every turn; the system message stays.
func (c *Conversation) Reset() { c.history = c.history[:c.system] }

// ContextFullError is a turn refused because the rendered conversation
// would not leave room for a reply: the turn is not kept, so the caller
// can say so and go on (or Reset).
type ContextFullError struct{ Tokens, Ctx int }

func (e *ContextFullError) Error() string {
	return fmt.Sprintf("the conversation is %d tokens, the model's context is %d", e.Tokens, e.Ctx)
}

// PromptError is a conversation the template or tokenizer could not turn
// into ids (a template that raises, say): bad input, not a failed run.
type PromptError struct{ Err error }

func (e *PromptError) Error() string { return e.Err.Error() }
func (e *PromptError) Unwrap() error { return e.Err }

// Turn is one exchange's outcome.
type Turn struct {
	// Reply is the assistant's text, invalid UTF-8 replaced (as
	// transformers' decode does): the turn the next prompt renders.
	Reply string
	// PromptTokens is the rendered conversation's length; Reused how many
	// of those the engine already held.
	PromptTokens, Reused int
	// Finish says why the reply ended (generate.Stats.Reason).
	Finish string
}

// TurnOptions are one turn's generation settings.
type TurnOptions struct {
	MaxTokens int
	Params    generate.Params
	// OnText, when set, receives the reply's text as it is generated.
	OnText func([]byte) error
}

// Validate checks the generation settings once, before any turn.
func (c *Conversation) Validate(o TurnOptions) error {
	_, err := generate.NewSequence(generate.Request{Prompt: []int{0}, MaxTokens: o.MaxTokens, Ctx: c.ctx,
		Params: o.Params, StopIDs: c.model.StopIDs, Tokenizer: c.model.Tokenizer}, c.vocab, c.ctx)
	return err
}

// Say adds a user turn and generates the reply. A *ContextFullError or a
// *PromptError leaves the conversation as it was; a generate.ParamError
// names a bad setting; any other error is the run's.
func (c *Conversation) Say(ctx context.Context, user string, o TurnOptions) (Turn, error) {
	msgs := append(c.history, Message{Role: "user", Content: user})
	prompt, err := c.model.Prompt(msgs)
	if err != nil {
		return Turn{}, &PromptError{err}
	}
	if len(prompt) >= c.ctx {
		return Turn{}, &ContextFullError{Tokens: len(prompt), Ctx: c.ctx}
	}
	keep := commonPrefix(c.fed, prompt)
	if keep < len(c.fed) || keep == len(prompt) || c.e.Pos() != len(c.fed) {
		c.e.Reset()
		c.fed, keep = nil, 0
	}
	seq, err := generate.NewSequence(generate.Request{Prompt: prompt[keep:], MaxTokens: o.MaxTokens, Ctx: c.ctx - keep,
		Params: o.Params, StopIDs: c.model.StopIDs, Tokenizer: c.model.Tokenizer, TopLogprobs: -1}, c.vocab, c.ctx)
	if err != nil {
		return Turn{}, err
	}
	var reply []byte
	st, err := generate.Run(ctx, c.e, seq, generate.Options{OnToken: func(t generate.Token) error {
		reply = append(reply, t.Text...)
		if o.OnText != nil {
			return o.OnText(t.Text)
		}
		return nil
	}})
	if err != nil {
		c.e.Reset()
		c.fed = nil
		return Turn{}, err
	}
	// What the engine now holds: the prompt and every generated token but
	// the last (reported, not fed).
	c.fed = append(c.fed[:0:0], prompt...)
	if g := seq.Generated(); len(g) > 0 {
		c.fed = append(c.fed, g[:len(g)-1]...)
	}
	text := strings.ToValidUTF8(string(reply), "\uFFFD")
	c.history = append(msgs, Message{Role: "assistant", Content: text})
	return Turn{Reply: text, PromptTokens: len(prompt), Reused: keep, Finish: st.Reason}, nil
}

// commonPrefix is the length of the longest common prefix of a and b.
func commonPrefix(a, b []int) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

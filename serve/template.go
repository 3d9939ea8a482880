package serve

import (
	"github.com/cflow-dev/cflow/generate"
	"github.com/cflow-dev/cflow/tokenizer"
)

// ChatTemplate turns a conversation into the prompt the model continues
// with the assistant's next turn. The file's own chat template (rendered
// with its tokenizer's special tokens) plugs in here; Plain is the
// fallback for files that carry none.
type ChatTemplate interface {
	// Name says which template this is (logged at start, for the user).
	Name() string
	// Prompt renders messages and returns the token ids to feed. It may
	// stop tokenizing once more than limit ids are out (limit ≤ 0: no
	// limit): the server passes ctx and refuses anything longer.
	Prompt(messages []Message, limit int) ([]int, error)
}

// Plain is the chat template of a file that has none: the messages'
// contents joined by newlines, after BOS — so a single user message is
// exactly the prompt `cflowc run --prompt` would feed.
type Plain struct{ Tokenizer tokenizer.Tokenizer }

// Name implements ChatTemplate.
func (Plain) Name() string {
	return "plain (the file has no chat template: contents joined by newlines)"
}

// Prompt implements ChatTemplate.
func (p Plain) Prompt(messages []Message, limit int) ([]int, error) {
	text, _ := p.Render(messages)
	return generate.EncodePromptLimit(p.Tokenizer, text, limit)
}

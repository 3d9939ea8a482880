package chat

import (
	"github.com/cflow-dev/cflow/cflowfmt"
)

// FromMetadata returns the model file's chat template and the options its
// tokenizer_config.json implies (bos_token, eos_token), with
// AddGenerationPrompt set: what chat, run --chat and tokenize --chat
// render with.
func FromMetadata(md *cflowfmt.Metadata) (*Template, Options, error) {
	o := Options{
		AddGenerationPrompt: true,
		BOSToken:            md.String(cflowfmt.KeyBOSToken, ""),
		EOSToken:            md.String(cflowfmt.KeyEOSToken, ""),
	}
	t, err := Parse(md.String(cflowfmt.KeyChatTemplate, ""))
	return t, o, err
}

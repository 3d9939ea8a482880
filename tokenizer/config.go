package tokenizer

import (
	"encoding/json"
	"fmt"
)

// Config is what cflow takes from tokenizer_config.json: the BOS/EOS
// token texts, whether encode adds them, the chat template, and whether
// decoding cleans up spaces.
type Config struct {
	BOSToken string
	EOSToken string
	// AddBOS/AddEOS are nil when the file does not say (the
	// post-processor in tokenizer.json then decides).
	AddBOS, AddEOS *bool
	ChatTemplate   string
	// CleanUpSpaces is clean_up_tokenization_spaces: decoded text gets
	// transformers' clean_up_tokenization (" ." → ".", " 's" → "'s", …).
	// Only an explicit true turns it on: a missing key is taken as true
	// by transformers.js and as true or false by transformers depending on
	// its version, and the tokenizers compared against the reference all
	// set it.
	CleanUpSpaces bool
}

// ParseConfig reads tokenizer_config.json. Token entries may be strings
// or {"content": ...} objects; chat_template may be a string or a list of
// named templates (the one named "default" is taken).
func ParseConfig(data []byte) (*Config, error) {
	var j struct {
		BOS          json.RawMessage `json:"bos_token"`
		EOS          json.RawMessage `json:"eos_token"`
		AddBOS       *bool           `json:"add_bos_token"`
		AddEOS       *bool           `json:"add_eos_token"`
		ChatTemplate json.RawMessage `json:"chat_template"`
		CleanUp      *bool           `json:"clean_up_tokenization_spaces"`
	}
	if err := json.Unmarshal(data, &j); err != nil {
		return nil, fmt.Errorf("tokenizer_config.json: %w", err)
	}
	c := &Config{AddBOS: j.AddBOS, AddEOS: j.AddEOS, CleanUpSpaces: j.CleanUp != nil && *j.CleanUp}
	var err error
	if c.BOSToken, err = tokenText(j.BOS); err != nil {
		return nil, fmt.Errorf("tokenizer_config.json: bos_token: %w", err)
	}
	if c.EOSToken, err = tokenText(j.EOS); err != nil {
		return nil, fmt.Errorf("tokenizer_config.json: eos_token: %w", err)
	}
	if len(j.ChatTemplate) > 0 && string(j.ChatTemplate) != "null" {
		if err := json.Unmarshal(j.ChatTemplate, &c.ChatTemplate); err != nil {
			var named []struct{ Name, Template string }
			if err2 := json.Unmarshal(j.ChatTemplate, &named); err2 != nil {
				return nil, fmt.Errorf("tokenizer_config.json: chat_template: %w", err)
			}
			for _, n := range named {
				if n.Name == "default" {
					c.ChatTemplate = n.Template
				}
			}
			if c.ChatTemplate == "" {
				return nil, fmt.Errorf("tokenizer_config.json: chat_template lists %d templates and none is named \"default\"", len(named))
			}
		}
	}
	return c, nil
}

func tokenText(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var o struct {
		Content string `json:"content"`
	}
	if err := json.Unmarshal(raw, &o); err != nil {
		return "", err
	}
	return o.Content, nil
}

package serve

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
)

// keys is the set of object keys a request may use at one place in its
// body, each with the keys of its value when that is an object (or a
// list of objects). Go's JSON decoder matches keys case-insensitively
// (Unicode folding: "ſtream" is "stream") and lets the last of two
// duplicates win, so a body a proxy reads as OpenAI's server does could
// run as another request here; strictKeys checks every key exactly first,
// after which the decoder can only ever map a key to the field of that
// very name.
type keys map[string]keys

// anyKeys marks an object whose keys are data (logit_bias' token ids, a
// tool's JSON schema): any key, each once.
var anyKeys = keys{"*": nil}

// leaf is a field whose value has no keys of ours (a number, a string, a
// list of them); an object there is still checked for duplicate keys.
var leaf keys

var streamOptionKeys = keys{"include_usage": leaf}

// commonKeys are the fields both completion endpoints read; refusedKeys
// (unsupported) name the ones recognised but not implemented.
var commonKeys = keys{
	"model": leaf, "max_tokens": leaf, "max_completion_tokens": leaf, "temperature": leaf, "top_p": leaf,
	"top_k": leaf, "min_p": leaf, "frequency_penalty": leaf, "presence_penalty": leaf, "repeat_penalty": leaf,
	"repeat_last_n": leaf, "seed": leaf, "stop": leaf, "stream": leaf, "stream_options": streamOptionKeys,
	"cache_prompt": leaf,
	"n":            leaf, "best_of": leaf, "logit_bias": anyKeys, "tools": anyKeys, "functions": anyKeys,
	"response_format": keys{"type": leaf, "json_schema": anyKeys}, "echo": leaf, "suffix": leaf,
	// Fields that change nothing a client can see from this server.
	"user": leaf, "metadata": anyKeys, "store": leaf, "service_tier": leaf,
	// Recognised but refused unless they are their no-op values.
	"ignore_eos": leaf, "min_tokens": leaf, "grammar": leaf, "json_schema": anyKeys, "mirostat": leaf,
	"typical_p": leaf, "prediction": anyKeys, "tool_choice": anyKeys, "parallel_tool_calls": leaf,
}

var chatKeys = with(commonKeys, keys{
	"messages":     keys{"role": leaf, "content": keys{"type": leaf, "text": leaf}},
	"logprobs":     leaf,
	"top_logprobs": leaf,
})

var completionKeys = with(commonKeys, keys{"prompt": leaf, "logprobs": leaf})

func with(a, b keys) keys {
	out := keys{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

// maxDepth bounds the nesting of a request body (Go's decoder allows
// 10,000 levels; no request of ours needs more than a few).
const maxDepth = 32

// strictKeys checks body against the keys allowed: every object key is
// one the schema names, spelled exactly, and no object repeats a key. It
// runs before the body is decoded, so a 400 names the first offending key
// by its path (messages[0].ROLE). Syntax errors are left to the decoder,
// which reports them with their offset.
func strictKeys(body []byte, allowed keys) *apiError {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	w := walker{dec: dec}
	err := w.value(allowed, "", 0)
	var ae *apiError
	if errors.As(err, &ae) {
		return ae
	}
	return nil
}

type walker struct{ dec *json.Decoder }

// value walks one JSON value at path; s is the schema of its keys.
func (w walker) value(s keys, path string, depth int) error {
	if depth > maxDepth {
		return badRequest("invalid_json", "the body nests deeper than %d levels (at %s)", maxDepth, orBody(path))
	}
	tok, err := w.dec.Token()
	if err != nil {
		return err
	}
	switch tok {
	case json.Delim('{'):
		seen := map[string]bool{}
		for w.dec.More() {
			kt, err := w.dec.Token()
			if err != nil {
				return err
			}
			k, _ := kt.(string)
			where := join(path, k)
			if seen[k] {
				return badParam(where, "the key appears twice in one object; send each field once")
			}
			seen[k] = true
			var sub keys
			switch {
			case s == nil:
			case len(s) == 1 && hasKey(s, "*"):
			default:
				v, ok := s[k]
				if !ok {
					return badParam(where, "unrecognized request argument (keys are case-sensitive; "+
						"a field this server does not implement is refused, never ignored)")
				}
				sub = v
			}
			if err := w.value(sub, where, depth+1); err != nil {
				return err
			}
		}
		_, err := w.dec.Token()
		return err
	case json.Delim('['):
		for i := 0; w.dec.More(); i++ {
			if err := w.value(s, path+"["+strconv.Itoa(i)+"]", depth+1); err != nil {
				return err
			}
		}
		_, err := w.dec.Token()
		return err
	}
	return nil
}

func hasKey(s keys, k string) bool { _, ok := s[k]; return ok }

func join(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

func orBody(path string) string {
	if path == "" {
		return "the top level"
	}
	return path
}

// readBody reads the whole body (the router bounds it), mapping an
// oversized one to 413.
func readBody(r io.Reader, limit int64) ([]byte, *apiError) {
	b, err := io.ReadAll(r)
	if err != nil {
		if isTooLarge(err) {
			return nil, errBodyTooLarge(limit)
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return nil, &apiError{Status: http.StatusRequestTimeout, Type: "invalid_request_error", Code: strp("body_timeout"),
				Message: "the request body did not arrive within the read timeout (--read-timeout)"}
		}
		return nil, badRequest("invalid_body", "reading the request body: %v", err)
	}
	return b, nil
}

func isTooLarge(err error) bool {
	var me *http.MaxBytesError
	return errors.As(err, &me)
}

func errBodyTooLarge(limit int64) *apiError {
	return &apiError{Status: http.StatusRequestEntityTooLarge, Type: "invalid_request_error", Code: strp("body_too_large"),
		Message: fmt.Sprintf("the request body exceeds %d bytes (the bound for --ctx's prompts; docs/SERVING.md, Limits)", limit)}
}

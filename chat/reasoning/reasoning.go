// Package reasoning splits a reasoning model's reply into its reasoning
// (the text between <think> and </think>, which Qwen3 and DeepSeek-R1
// write before answering) and its content, so a server can return them
// as OpenAI-style reasoning_content and content, whole or streamed. A
// reply may start inside the reasoning: DeepSeek-R1's template opens
// <think> in the generation prompt itself (StartsInside).
package reasoning

import "strings"

// Tags are the markers around the reasoning.
type Tags struct{ Open, Close string }

// Think is the <think>…</think> pair of Qwen3, QwQ and DeepSeek-R1.
var Think = Tags{Open: "<think>", Close: "</think>"}

// Detect says whether the chat template writes reasoning between the
// Think tags (it contains both), as llama.cpp decides.
func Detect(template string) (Tags, bool) {
	if strings.Contains(template, Think.Open) && strings.Contains(template, Think.Close) {
		return Think, true
	}
	return Tags{}, false
}

// StartsInside says whether the rendered prompt leaves the reply inside
// the reasoning: it ends with the open tag (DeepSeek-R1's generation
// prompt ends "<think>\n" with enable_thinking; Qwen3's with
// enable_thinking false ends with an empty, closed block and does not).
func StartsInside(prompt string, t Tags) bool {
	return t.Open != "" && strings.HasSuffix(strings.TrimRight(prompt, " \t\r\n"), t.Open)
}

// Split divides a whole reply. Reasoning is trimmed of surrounding
// whitespace, content of leading whitespace; a reply that never opens
// the reasoning (and does not start inside it) is all content, and one
// that never closes it is all reasoning (generation stopped while
// thinking).
func Split(text string, t Tags, inside bool) (reasoning, content string) {
	return split(text, t, inside, true)
}

// split is Split on a reply so far; without final it holds back what may
// still become a tag and trailing whitespace, so what it returns only
// grows as text is added.
func split(text string, t Tags, inside, final bool) (reasoning, content string) {
	rest := text
	if !inside {
		lead := strings.TrimLeft(text, " \t\r\n")
		switch {
		case strings.HasPrefix(lead, t.Open):
			rest = lead[len(t.Open):]
		case !final && strings.HasPrefix(t.Open, lead):
			return "", "" // may be the open tag still
		default:
			return "", trimContent(text, final)
		}
	}
	i := strings.Index(rest, t.Close)
	if i < 0 {
		if !final {
			rest = rest[:len(rest)-heldBack(rest, t.Close)]
		}
		return strings.TrimSpace(rest), ""
	}
	return strings.TrimSpace(rest[:i]), trimContent(rest[i+len(t.Close):], final)
}

func trimContent(s string, _ bool) string {
	return strings.TrimLeft(s, " \t\r\n")
}

// heldBack is the length of the longest end of s that begins marker
// without being all of it.
func heldBack(s, marker string) int {
	for n := min(len(s), len(marker)-1); n > 0; n-- {
		if strings.HasSuffix(s, marker[:n]) {
			return n
		}
	}
	return 0
}

// Delta is a piece of a streamed reply: more reasoning or more content.
type Delta struct{ Reasoning, Content string }

// Stream splits a reply as it is generated; its deltas join to what
// Split gives for the whole reply.
type Stream struct {
	tags               Tags
	inside             bool
	buf                strings.Builder
	reasoning, content string
}

// NewStream starts a split; inside as for Split.
func NewStream(t Tags, inside bool) *Stream { return &Stream{tags: t, inside: inside} }

// Feed adds the next piece of generated text.
func (s *Stream) Feed(piece string) []Delta {
	s.buf.WriteString(piece)
	return s.diff(false)
}

// Close ends the reply and returns what was held back.
func (s *Stream) Close() []Delta { return s.diff(true) }

func (s *Stream) diff(final bool) []Delta {
	r, c := split(s.buf.String(), s.tags, s.inside, final)
	var out []Delta
	// Held-back trailing whitespace of the reasoning shows up only once
	// more reasoning follows; both only grow.
	if len(r) > len(s.reasoning) && strings.HasPrefix(r, s.reasoning) {
		out = append(out, Delta{Reasoning: r[len(s.reasoning):]})
		s.reasoning = r
	}
	if len(c) > len(s.content) && strings.HasPrefix(c, s.content) {
		out = append(out, Delta{Content: c[len(s.content):]})
		s.content = c
	}
	return out
}

package toolcall

import (
	"encoding/json"
	"errors"
	"io"
	"strings"
)

// state is how far a scan of a (possibly still growing) text got.
type state int

const (
	complete   state = iota
	incomplete       // the text ends inside it: more may complete it
	malformed        // it can never be what was looked for
)

// callObject is a JSON call object found at the start of a text: its
// name and id, where its arguments object lies (argStart < 0 until the
// value has begun) and where the object ends.
type callObject struct {
	state            state
	name, id         string
	hasName          bool
	argStart, argEnd int
	end              int
}

// scanCallObject reads {"name": "…", "arguments": {…}} (argKey names the
// arguments' key: "arguments" or, for Llama, "parameters" too; an "id"
// and a "type": "function" may come along) at the start of s. Any other
// key, a name that is not a string or arguments that are not an object
// make it malformed; a text ending inside it is incomplete, with what
// was read so far.
func scanCallObject(s string, argKeys ...string) callObject {
	c := callObject{argStart: -1, argEnd: -1}
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	fail := func(err error) callObject {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			c.state = incomplete
		} else {
			c.state = malformed
		}
		return c
	}
	tok, err := dec.Token()
	if err != nil {
		return fail(err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		c.state = malformed
		return c
	}
	hasArgs := false
	for {
		tok, err := dec.Token()
		if err != nil {
			return fail(err)
		}
		if d, ok := tok.(json.Delim); ok && d == '}' {
			break
		}
		key, _ := tok.(string)
		switch {
		case key == "name" || key == "id" || key == "type":
			v, err := dec.Token()
			if err != nil {
				return fail(err)
			}
			str, ok := v.(string)
			if !ok || (key == "type" && str != "function") {
				c.state = malformed
				return c
			}
			if key == "name" {
				c.name, c.hasName = str, true
			} else if key == "id" {
				c.id = str
			}
		case contains(argKeys, key) && !hasArgs:
			hasArgs = true
			off := int(dec.InputOffset())
			start := off + strings.IndexAny(s[off:], "{[\"tfn0123456789-")
			if start < off {
				c.state = incomplete
				return c
			}
			if s[start] != '{' {
				c.state = malformed
				return c
			}
			c.argStart = start
			if err := skipValue(dec); err != nil {
				return fail(err)
			}
			c.argEnd = int(dec.InputOffset())
		default:
			c.state = malformed
			return c
		}
	}
	if !c.hasName || !hasArgs {
		c.state = malformed
		return c
	}
	c.end = int(dec.InputOffset())
	c.state = complete
	return c
}

// skipValue reads one whole JSON value's tokens.
func skipValue(dec *json.Decoder) error {
	depth := 0
	for {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		if d, ok := tok.(json.Delim); ok {
			if d == '{' || d == '[' {
				depth++
			} else {
				depth--
			}
		}
		if depth == 0 {
			return nil
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// heldBack is the length of the longest end of s that begins marker
// without being all of it: text that may yet turn into the marker.
func heldBack(s, marker string) int {
	for n := min(len(s), len(marker)-1); n > 0; n-- {
		if strings.HasSuffix(s, marker[:n]) {
			return n
		}
	}
	return 0
}

// skipSpace returns the index of the first non-whitespace byte at or
// after i.
func skipSpace(s string, i int) int {
	for i < len(s) && strings.IndexByte(" \t\r\n", s[i]) >= 0 {
		i++
	}
	return i
}

// quoteJSON is s as a JSON string, without Go's HTML escaping.
func quoteJSON(s string) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(s) // a string always encodes
	return strings.TrimSuffix(b.String(), "\n")
}

// validJSONNumber says whether s is a number in JSON's grammar.
func validJSONNumber(s string) bool {
	var n json.Number
	return json.Unmarshal([]byte(s), &n) == nil
}

func isEOF(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

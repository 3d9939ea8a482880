package convert

import (
	"fmt"
)

// checkpoint is the conversion's working view of a source: the source's
// tensors (which a family's prepare step may rename or split) and which of
// them have been handed out, so that strict.go can refuse any left
// unconsumed.
type checkpoint struct {
	*source
	claimed map[string]bool // tensors get has handed out (strict.go)
}

// get returns a tensor by name, refusing missing and unusable ones with an
// error that names where it was looked for.
func (c *checkpoint) get(name string) (*tensor, error) {
	t, ok := c.tensors[name]
	if !ok {
		return nil, fmt.Errorf("%s: missing tensor %s", c.path, name)
	}
	if c.claimed == nil {
		c.claimed = map[string]bool{}
	}
	c.claimed[name] = true
	if t.unsupported != "" {
		return nil, fmt.Errorf("%s: tensor %s: unsupported %s (want F32, F16 or BF16 and at most 2 dimensions)", t.file, name, t.unsupported)
	}
	return t, nil
}

// has reports whether a tensor exists, for detection and optional weights.
func (c *checkpoint) has(name string) bool { _, ok := c.tensors[name]; return ok }

package convert

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/cflow-dev/cflow/cflowfmt"
	"github.com/cflow-dev/cflow/tokenizer"
)

// checkpoint is an opened input: its config and every tensor by HF name,
// each aliasing a file mapping. llama2.c files are presented the same way
// (llama2c.go), so everything after opening is format-independent.
type checkpoint struct {
	path       string // what the user named
	configPath string // for error messages
	cfg        cfgMap
	tensors    map[string]*tensor
	claimed    map[string]bool // tensors get has handed out (strict.go)
	notes      []string        // what the conversion left out on purpose, for the user
	maps       []*mapping
	tokenizer  *tokenizer.Source // tokenizer files, nil when absent
	inputBytes int64             // total tensor bytes, the throughput denominator
}

// openCheckpoint dispatches on what path is: a directory (HF), a
// .safetensors file with a sibling config.json, or a llama2.c .bin.
// mapped, when not nil, is called with each input file once it is mapped
// and before any of it is read (a test seam: Options.onMapped).
func openCheckpoint(path string, mapped func(file string)) (*checkpoint, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		switch {
		case strings.HasSuffix(path, ".bin"):
			return openLlama2c(path, mapped)
		case strings.HasSuffix(path, ".safetensors"):
			return openHF(filepath.Dir(path), []string{path}, mapped)
		}
		return nil, fmt.Errorf("%s: not a checkpoint directory, .safetensors or llama2.c .bin file", path)
	}
	return openHF(path, nil, mapped)
}

func openHF(dir string, files []string, mapped func(string)) (c *checkpoint, err error) {
	c = &checkpoint{path: dir, configPath: filepath.Join(dir, "config.json"), tensors: map[string]*tensor{}}
	defer func() {
		if err != nil {
			c.close()
			c = nil
		}
	}()
	cfgBytes, err := os.ReadFile(c.configPath)
	if err != nil {
		return c, fmt.Errorf("%s: a checkpoint directory needs config.json: %w", dir, err)
	}
	if c.cfg, err = parseConfig(c.configPath, cfgBytes); err != nil {
		return c, err
	}
	if c.tokenizer, err = tokenizer.ReadDir(dir); err != nil {
		return c, err
	}
	var weightMap map[string]string
	if files == nil {
		idx := filepath.Join(dir, "model.safetensors.index.json")
		if b, err := os.ReadFile(idx); err == nil {
			var ix struct {
				WeightMap map[string]string `json:"weight_map"`
			}
			if err := json.Unmarshal(b, &ix); err != nil {
				return c, fmt.Errorf("%s: %v", idx, err)
			}
			if len(ix.WeightMap) == 0 {
				return c, fmt.Errorf("%s: empty weight_map", idx)
			}
			weightMap = ix.WeightMap
			seen := map[string]bool{}
			for _, f := range ix.WeightMap {
				if strings.Contains(f, "/") || strings.Contains(f, `\`) || f == ".." {
					return c, fmt.Errorf("%s: shard name %q must be a file in the directory", idx, f)
				}
				if !seen[f] {
					seen[f] = true
					files = append(files, filepath.Join(dir, f))
				}
			}
			sort.Strings(files)
		} else if !errors.Is(err, os.ErrNotExist) {
			return c, err
		} else {
			files, _ = filepath.Glob(filepath.Join(dir, "*.safetensors"))
			sort.Strings(files)
		}
	}
	if len(files) == 0 {
		return c, fmt.Errorf("%s: no *.safetensors files", dir)
	}
	for _, f := range files {
		m, err := mapFile(f)
		if err != nil {
			return c, err
		}
		c.maps = append(c.maps, m)
		if mapped != nil {
			mapped(f)
		}
		// The header is parsed and every value checked for finiteness
		// here, through the mapping: a shard truncated meanwhile is a
		// FormatError naming it, not a SIGBUS crash.
		var ts map[string]*tensor
		err = cflowfmt.GuardFaultIn(c.locate, func() (err error) { ts, err = parseSafetensors(f, m.data); return err })
		if err != nil {
			return c, err
		}
		for name, t := range ts {
			if old, dup := c.tensors[name]; dup {
				return c, fmt.Errorf("%s: tensor %s is also in %s", f, name, old.file)
			}
			c.tensors[name] = t
			c.inputBytes += int64(len(t.data))
		}
	}
	for name, f := range weightMap {
		t, ok := c.tensors[name]
		if !ok {
			return c, fmt.Errorf("%s: missing tensor %s (model.safetensors.index.json puts it there)", filepath.Join(dir, f), name)
		}
		if filepath.Base(t.file) != f {
			return c, fmt.Errorf("%s: tensor %s is in %s, but the index says %s", dir, name, filepath.Base(t.file), f)
		}
	}
	return c, nil
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

func (c *checkpoint) close() error {
	var first error
	for _, m := range c.maps {
		if err := m.close(); err != nil && first == nil {
			first = err
		}
	}
	c.maps = nil
	return first
}

package convert

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/cflow-dev/cflow/internal/fileio"
	"github.com/cflow-dev/cflow/tokenizer"
)

// openSafetensorsDir opens a Hugging Face checkpoint directory: config.json,
// the tokenizer files beside it, and the shards model.safetensors.index.json
// names (every *.safetensors when there is no index).
func openSafetensorsDir(dir string, mapped func(string)) (*source, error) {
	return openHF(dir, nil, mapped)
}

// openSafetensorsFile opens one .safetensors file as the only shard of the
// directory that holds it (whose config.json describes it).
func openSafetensorsFile(path string, mapped func(string)) (*source, error) {
	return openHF(filepath.Dir(path), []string{path}, mapped)
}

func openHF(dir string, files []string, mapped func(string)) (c *source, err error) {
	c = &source{path: dir, tensors: map[string]*tensor{}}
	configPath := filepath.Join(dir, "config.json")
	defer func() {
		if err != nil {
			c.close()
			c = nil
		}
	}()
	cfgBytes, err := os.ReadFile(configPath)
	if err != nil {
		return c, fmt.Errorf("%s: a checkpoint directory needs config.json: %w", dir, err)
	}
	c.config = configDoc{file: configPath, json: cfgBytes}
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
		err = fileio.GuardFaultIn(c.locate, func() (err error) { ts, err = parseSafetensors(f, m.data); return err })
		if err != nil {
			return c, err
		}
		for name, t := range ts {
			if old, dup := c.tensors[name]; dup {
				return c, fmt.Errorf("%s: tensor %s is also in %s", f, name, old.file)
			}
			c.tensors[name] = t
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

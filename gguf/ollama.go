package gguf

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// OllamaPrefix marks a model named in ollama's store ("ollama:llama3.2:1b")
// rather than by path.
const OllamaPrefix = "ollama:"

// ollamaModelLayer is the media type of the manifest layer that holds the
// GGUF (ollama's types.go / server/images.go).
const ollamaModelLayer = "application/vnd.ollama.image.model"

// ollama's defaults for a model name without host or namespace.
const (
	ollamaHost      = "registry.ollama.ai"
	ollamaNamespace = "library"
	ollamaTag       = "latest"
)

// OllamaModelsDir is the store ollama uses: $OLLAMA_MODELS, else
// ~/.ollama/models.
func OllamaModelsDir() (string, error) {
	if d := os.Getenv("OLLAMA_MODELS"); d != "" {
		return d, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("ollama store: %w (set OLLAMA_MODELS)", err)
	}
	return filepath.Join(home, ".ollama", "models"), nil
}

// ResolveOllama finds the GGUF blob of ref (NAME[:TAG], NAME possibly
// NAMESPACE/NAME or HOST/NAMESPACE/NAME, as ollama names models) in the
// store at dir: the manifest under manifests/HOST/NAMESPACE/NAME/TAG, its
// application/vnd.ollama.image.model layer, the blob blobs/sha256-HEX,
// whose size and SHA-256 must be the layer's. A name not in the store is
// an error listing the models that are.
func ResolveOllama(ref, dir string) (string, error) {
	ref = strings.TrimPrefix(ref, OllamaPrefix)
	name, tag := ref, ollamaTag
	if i := strings.LastIndexByte(ref, ':'); i > strings.LastIndexByte(ref, '/') {
		name, tag = ref[:i], ref[i+1:]
	}
	parts := strings.Split(name, "/")
	switch len(parts) {
	case 1:
		parts = []string{ollamaHost, ollamaNamespace, parts[0]}
	case 2:
		parts = []string{ollamaHost, parts[0], parts[1]}
	case 3:
	default:
		return "", fmt.Errorf("ollama: %q is not a model name (NAME[:TAG], NAMESPACE/NAME[:TAG] or HOST/NAMESPACE/NAME[:TAG])", ref)
	}
	for _, p := range append(parts, tag) {
		if p == "" || p == "." || p == ".." || strings.ContainsAny(p, `\`) {
			return "", fmt.Errorf("ollama: %q is not a model name", ref)
		}
	}
	manifest := filepath.Join(append([]string{dir, "manifests"}, append(parts, tag)...)...)
	b, err := os.ReadFile(manifest)
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("ollama: no model %s:%s in %s (%s)", name, tag, dir, listOllama(dir))
	}
	if err != nil {
		return "", fmt.Errorf("ollama: %w", err)
	}
	var m struct {
		Layers []struct {
			MediaType string `json:"mediaType"`
			Digest    string `json:"digest"`
			Size      int64  `json:"size"`
		} `json:"layers"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return "", fmt.Errorf("ollama: manifest %s: %w", manifest, err)
	}
	layer := -1
	for i, l := range m.Layers {
		if l.MediaType == ollamaModelLayer {
			if layer >= 0 {
				return "", fmt.Errorf("ollama: manifest %s has more than one %s layer", manifest, ollamaModelLayer)
			}
			layer = i
		}
	}
	if layer < 0 {
		return "", fmt.Errorf("ollama: manifest %s has no %s layer", manifest, ollamaModelLayer)
	}
	digest, size := m.Layers[layer].Digest, m.Layers[layer].Size
	hexDigest, ok := strings.CutPrefix(digest, "sha256:")
	if dec, err := hex.DecodeString(hexDigest); !ok || err != nil || len(dec) != sha256.Size {
		return "", fmt.Errorf("ollama: manifest %s: model layer digest %q is not sha256:<64 hex digits>", manifest, digest)
	}
	blob := filepath.Join(dir, "blobs", "sha256-"+hexDigest)
	if err := checkBlob(blob, hexDigest, size); err != nil {
		return "", fmt.Errorf("ollama: %s:%s: %w", name, tag, err)
	}
	return blob, nil
}

// checkBlob holds the blob to the manifest's size and digest.
func checkBlob(path, hexDigest string, size int64) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("blob %s is not a regular file", path)
	}
	if st.Size() != size {
		return fmt.Errorf("blob %s has %d bytes, the manifest says %d", path, st.Size(), size)
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return err
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != strings.ToLower(hexDigest) {
		return fmt.Errorf("blob %s has sha256 %s, the manifest says %s", path, got, hexDigest)
	}
	return nil
}

// listOllama names the models in the store as ollama list shows them
// (library models without host and namespace).
func listOllama(dir string) string {
	root := filepath.Join(dir, "manifests")
	var names []string
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return nil
		}
		parts := strings.Split(filepath.ToSlash(rel), "/")
		if len(parts) != 4 {
			return nil
		}
		name := strings.Join(parts[:3], "/")
		if parts[0] == ollamaHost && parts[1] == ollamaNamespace {
			name = parts[2]
		} else if parts[0] == ollamaHost {
			name = parts[1] + "/" + parts[2]
		}
		names = append(names, name+":"+parts[3])
		return nil
	})
	if len(names) == 0 {
		return "the store has no models"
	}
	sort.Strings(names)
	return "models present: " + strings.Join(names, ", ")
}

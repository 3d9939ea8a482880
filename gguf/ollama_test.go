package gguf_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cflow-dev/cflow/gguf"
)

// layOutOllama writes a store as ollama's server/images.go lays it out:
// blobs/sha256-HEX for each layer, the manifest (docker v2 schema, the
// model layer application/vnd.ollama.image.model beside template and
// params layers) under manifests/HOST/NAMESPACE/NAME/TAG.
func layOutOllama(t *testing.T, dir, host, ns, name, tag string, model []byte) string {
	t.Helper()
	blob := func(b []byte) (string, int) {
		sum := sha256.Sum256(b)
		h := hex.EncodeToString(sum[:])
		p := filepath.Join(dir, "blobs", "sha256-"+h)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return "sha256:" + h, len(b)
	}
	layer := func(mt string, b []byte) map[string]any {
		d, n := blob(b)
		return map[string]any{"mediaType": mt, "digest": d, "size": n}
	}
	m := map[string]any{
		"schemaVersion": 2,
		"mediaType":     "application/vnd.docker.distribution.manifest.v2+json",
		"config":        layer("application/vnd.docker.container.image.v1+json", []byte(`{"model_format":"gguf","model_family":"llama"}`)),
		"layers": []any{
			layer("application/vnd.ollama.image.model", model),
			layer("application/vnd.ollama.image.template", []byte("{{ .Prompt }}")),
			layer("application/vnd.ollama.image.params", []byte(`{"stop":["<|eot_id|>"]}`)),
		},
	}
	b, _ := json.Marshal(m)
	p := filepath.Join(dir, "manifests", host, ns, name, tag)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	d, _ := blob(model)
	return filepath.Join(dir, "blobs", "sha256-"+strings.TrimPrefix(d, "sha256:"))
}

func TestResolveOllama(t *testing.T) {
	dir := t.TempDir()
	model := mustRead(t, "testdata/reader.gguf")
	latest := layOutOllama(t, dir, "registry.ollama.ai", "library", "tiny", "latest", model)
	other := append([]byte(nil), model...)
	other[len(other)-1] ^= 1
	tagged := layOutOllama(t, dir, "registry.ollama.ai", "library", "tiny", "q8", other)
	user := layOutOllama(t, dir, "registry.ollama.ai", "someone", "mine", "v1", model)
	for ref, want := range map[string]string{"ollama:tiny": latest, "tiny:latest": latest, "ollama:tiny:q8": tagged, "someone/mine:v1": user,
		"registry.ollama.ai/library/tiny": latest} {
		got, err := gguf.ResolveOllama(ref, dir)
		if err != nil || got != want {
			t.Errorf("%s: %q %v, want %q", ref, got, err, want)
		}
	}
	if f, err := gguf.Open(latest); err != nil || len(f.Tensors) == 0 {
		t.Errorf("the resolved blob does not open as a GGUF: %v", err)
	}
	_, err := gguf.ResolveOllama("ollama:llama3.2", dir)
	if err == nil || !strings.Contains(err.Error(), "no model llama3.2:latest") || !strings.Contains(err.Error(), "models present: someone/mine:v1, tiny:latest, tiny:q8") {
		t.Errorf("a missing model: %v", err)
	}
	for _, bad := range []string{"ollama:../x", "a/b/c/d", "tiny:"} {
		if _, err := gguf.ResolveOllama(bad, dir); err == nil {
			t.Errorf("%q resolved", bad)
		}
	}
	// A blob that is not what the manifest says is refused: flip a byte
	// (digest), then cut it (size).
	b := mustRead(t, latest)
	b[100] ^= 0xff
	if err := os.WriteFile(latest, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := gguf.ResolveOllama("tiny", dir); err == nil || !strings.Contains(err.Error(), "has sha256") {
		t.Errorf("a corrupted blob: %v", err)
	}
	if err := os.WriteFile(latest, b[:50], 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := gguf.ResolveOllama("tiny", dir); err == nil || !strings.Contains(err.Error(), "the manifest says") {
		t.Errorf("a truncated blob: %v", err)
	}
	t.Setenv("OLLAMA_MODELS", dir)
	if d, err := gguf.OllamaModelsDir(); d != dir || err != nil {
		t.Errorf("OllamaModelsDir %q %v", d, err)
	}
}

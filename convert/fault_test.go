package convert

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"

	"github.com/cflow-dev/cflow/internal/fileio"
)

const page = 4096

// storiesCopy copies the vendored llama2.c model where the test may
// truncate it, returning the path and the byte offsets (in the file) of
// the first FFN gate weight (w1) and of the final norm, from the llama2.c
// layout: header, embedding, rms_att, wq, wk, wv, wo, rms_ffn, w1, w2, w3,
// final norm, freq_cis.
func storiesCopy(t *testing.T) (path string, w1, finalNorm int64) {
	t.Helper()
	raw, err := os.ReadFile(stories)
	if err != nil {
		t.Fatal(err)
	}
	v := make([]int64, 7)
	for i := range v {
		v[i] = int64(int32(binary.LittleEndian.Uint32(raw[4*i:])))
	}
	d, hid, L, heads, kvh, vocab := v[0], v[1], v[2], v[3], v[4], v[5]
	kv := kvh * (d / heads)
	w1 = 28 + 4*(vocab*d+L*d+L*d*d+2*L*kv*d+L*d*d+L*d)
	finalNorm = w1 + 4*3*L*hid*d
	path = filepath.Join(t.TempDir(), "stories.bin")
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	return path, w1, finalNorm
}

// faultAt asserts err is the FaultError of a memory fault in file at an
// offset in [lo, hi): the conversion ended in an error naming the input,
// not in a SIGBUS crash of the test binary.
func faultAt(t *testing.T, err error, file string, lo, hi int64) {
	t.Helper()
	var fe *fileio.FaultError
	if !errors.As(err, &fe) || !strings.Contains(err.Error(), "memory fault") {
		t.Fatalf("want a memory-fault FaultError, got %v", err)
	}
	if fe.File != file || fe.Offset < lo || fe.Offset >= hi {
		t.Fatalf("fault reported in %s at offset %d, want %s at [%d, %d): %v", fe.File, fe.Offset, file, lo, hi, err)
	}
}

func truncate(t *testing.T, path string, size int64) {
	if err := os.Truncate(path, size); err != nil {
		t.Error(err)
	}
}

// TestTruncatedWhileOpening (issue 19 item 6): an input truncated after it
// is mapped and before the checkpoint is read (header, finiteness scan) is
// a FormatError naming it at a vanished offset, with no output file.
func TestTruncatedWhileOpening(t *testing.T) {
	in, _, _ := storiesCopy(t)
	st, _ := os.Stat(in)
	half := st.Size() / 2 / page * page
	out := filepath.Join(t.TempDir(), "o.cflow")
	_, err := Convert(context.Background(), in, out, Options{NUMANodes: 1, onMapped: func(f string) { truncate(t, f, half) }})
	faultAt(t, err, in, half, st.Size())
	noOutput(t, out)

	fx := writeFixture(t, filepath.Join(t.TempDir(), "m"), "llama", "BF16")
	sf := filepath.Join(fx.dir, "model.safetensors")
	_, err = Convert(context.Background(), fx.dir, out, Options{NUMANodes: 1, onMapped: func(f string) { truncate(t, f, page) }})
	faultAt(t, err, sf, page, 1<<40)
	noOutput(t, out)
}

// TestTruncatedUnderWorkers: the file loses everything from the FFN
// weights on once the first tile is written. Only the quantizing workers
// read FFN weights, and at most the first window of jobs can have been
// encoded before the truncation, so a later FFN stripe faults in a worker:
// the error names the file at an offset inside w1..w3.
func TestTruncatedUnderWorkers(t *testing.T) {
	in, w1, finalNorm := storiesCopy(t)
	out := filepath.Join(t.TempDir(), "o.cflow")
	done := false
	_, err := Convert(context.Background(), in, out, Options{NUMANodes: 1, Workers: 1, onProgress: func() {
		if !done {
			done = true
			truncate(t, in, w1)
		}
	}})
	faultAt(t, err, in, w1, finalNorm)
	noOutput(t, out)
}

// TestTruncatedUnderWriter: a tied checkpoint laid out as matrices, then
// the lm_head copy (compared with the embedding in pass 1, never read
// again), then the norms; truncating it to the page boundary before the
// first norm once the first tile is written removes only data the writer
// alone reads (norm vectors), so the writer's read faults.
func TestTruncatedUnderWriter(t *testing.T) {
	fx := writeFixture(t, filepath.Join(t.TempDir(), "m"), "llama", "F32")
	var names []string
	for n := range fx.truth {
		if n != "lm_head.weight" {
			names = append(names, n)
		}
	}
	isNorm := func(n string) bool { return strings.Contains(n, "norm") }
	sort.Slice(names, func(i, j int) bool {
		if isNorm(names[i]) != isNorm(names[j]) {
			return !isNorm(names[i])
		}
		return names[i] < names[j]
	})
	var ts []STTensor
	add := func(name string, shape []int, v []float32) {
		ts = append(ts, STTensor{Name: name, DType: "F32", Shape: shape, Fill: func(w io.Writer) error { _, err := w.Write(encodeAs("F32", v)); return err }})
	}
	for i, n := range names {
		sh := fx.shape[n]
		if isNorm(n) {
			if !isNorm(names[i-1]) {
				add("lm_head.weight", []int{fxV, fxD}, fx.truth["model.embed_tokens.weight"])
			}
			add(n, []int{sh[1]}, fx.truth[n])
			continue
		}
		add(n, []int{sh[0], sh[1]}, fx.truth[n])
	}
	sf := filepath.Join(fx.dir, "model.safetensors")
	if err := WriteSafetensors(sf, ts); err != nil {
		t.Fatal(err)
	}
	fx.cfg["tie_word_embeddings"] = true
	cb, _ := json.Marshal(fx.cfg)
	if err := os.WriteFile(filepath.Join(fx.dir, "config.json"), cb, 0o644); err != nil {
		t.Fatal(err)
	}
	// The first norm's offset in the file, from the safetensors header.
	raw, err := os.ReadFile(sf)
	if err != nil {
		t.Fatal(err)
	}
	hlen := int64(binary.LittleEndian.Uint64(raw))
	var hdr map[string]json.RawMessage
	if err := json.Unmarshal(raw[8:8+hlen], &hdr); err != nil {
		t.Fatal(err)
	}
	firstNorm, lmHead := int64(1<<62), int64(0)
	for n, m := range hdr {
		var e struct {
			Offsets [2]int64 `json:"data_offsets"`
		}
		json.Unmarshal(m, &e)
		switch {
		case isNorm(n):
			firstNorm = min(firstNorm, 8+hlen+e.Offsets[0])
		case n == "lm_head.weight":
			lmHead = 8 + hlen + e.Offsets[0]
		}
	}
	cut := firstNorm / page * page
	if cut <= lmHead {
		t.Fatalf("lm_head at %d does not cover the page before the first norm at %d", lmHead, firstNorm)
	}
	out := filepath.Join(t.TempDir(), "o.cflow")
	done := false
	_, err = Convert(context.Background(), fx.dir, out, Options{NUMANodes: 1, Workers: 1, onProgress: func() {
		if !done {
			done = true
			truncate(t, sf, cut)
		}
	}})
	faultAt(t, err, sf, firstNorm, int64(len(raw)))
	noOutput(t, out)
}

// TestTruncatedBeforePlanning: the input truncated after the checkpoint
// is opened and before the converter reads it again to build the spec
// (norm vectors into metadata) and the plan. The seam is --tokenizer
// naming a FIFO: Convert reads it right after opening the checkpoint, and
// the test's open of the FIFO for writing returns only once Convert has
// opened it for reading, so the truncation happens exactly there.
func TestTruncatedBeforePlanning(t *testing.T) {
	in, _, _ := storiesCopy(t)
	fifo := filepath.Join(t.TempDir(), "tokenizer.bin")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	go func() {
		w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err != nil {
			t.Error(err)
			return
		}
		truncate(t, in, 0)
		// A well-formed llama2.c score table for stories260K's 512 ids
		// (max length, then score, length, piece per id), so the
		// tokenizer passes and the converter goes on to read the input.
		tok := binary.LittleEndian.AppendUint32(nil, 4)
		for i := 0; i < 512; i++ {
			piece := fmt.Sprintf("t%d", i)
			tok = binary.LittleEndian.AppendUint32(tok, 0)
			tok = binary.LittleEndian.AppendUint32(tok, uint32(len(piece)))
			tok = append(tok, piece...)
		}
		w.Write(tok)
		w.Close()
	}()
	out := filepath.Join(t.TempDir(), "o.cflow")
	_, err := Convert(context.Background(), in, out, Options{NUMANodes: 1, Tokenizer: fifo})
	faultAt(t, err, in, 0, 1<<40)
	noOutput(t, out)
}

package convert

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"

	"github.com/cflow-dev/cflow/internal/fileio"
)

// STTensor is one tensor for WriteSafetensors: its bytes are produced by
// Fill, streamed, so a multi-gigabyte checkpoint never sits in memory.
type STTensor struct {
	Name  string
	DType string // "F32", "F16" or "BF16"
	Shape []int
	// Fill must write exactly the tensor's byte size.
	Fill func(w io.Writer) error
}

func (t *STTensor) size() (int64, error) {
	es := map[string]int64{"F32": 4, "F16": 2, "BF16": 2}[t.DType]
	if es == 0 {
		return 0, fmt.Errorf("tensor %s: dtype %q", t.Name, t.DType)
	}
	n := es
	for _, s := range t.Shape {
		n *= int64(s)
	}
	return n, nil
}

// WriteSafetensors writes a safetensors file (tensors in the given order)
// through a temp file renamed at the end. It exists for the synthetic
// checkpoints of `cflowc dev synth` and for tests.
func WriteSafetensors(path string, tensors []STTensor) (err error) {
	hdr := map[string]any{"__metadata__": map[string]string{"format": "pt"}}
	var off int64
	sizes := make([]int64, len(tensors))
	for i := range tensors {
		t := &tensors[i]
		n, err := t.size()
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		sizes[i] = n
		shape := t.Shape
		if shape == nil {
			shape = []int{}
		}
		hdr[t.Name] = map[string]any{"dtype": t.DType, "shape": shape, "data_offsets": [2]int64{off, off + n}}
		off += n
	}
	hb, err := json.Marshal(hdr)
	if err != nil {
		return err
	}
	for len(hb)%8 != 0 {
		hb = append(hb, ' ')
	}
	bw, err := fileio.CreateSink(path)
	if err != nil {
		return err
	}
	defer bw.Abort() // no-op after Commit
	binary.Write(bw, binary.LittleEndian, uint64(len(hb)))
	bw.Write(hb)
	for i := range tensors {
		cw := &countWriter{w: bw}
		if err := tensors[i].Fill(cw); err != nil {
			return fmt.Errorf("%s: tensor %s: %w", path, tensors[i].Name, err)
		}
		if cw.n != sizes[i] {
			return fmt.Errorf("%s: tensor %s: Fill wrote %d bytes, want %d", path, tensors[i].Name, cw.n, sizes[i])
		}
	}
	return bw.Commit()
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// writeIndex writes model.safetensors.index.json for sharded checkpoints.
func writeIndex(dir string, weightMap map[string]string) error {
	b, err := json.MarshalIndent(map[string]any{"metadata": map[string]any{}, "weight_map": weightMap}, "", " ")
	if err != nil {
		return err
	}
	return fileio.WriteFileAtomic(filepath.Join(dir, "model.safetensors.index.json"), b)
}

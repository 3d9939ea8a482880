package gguf

import (
	"encoding/binary"
	"fmt"
	"io"

	"github.com/cflow-dev/cflow/cflowfmt"
	"github.com/cflow-dev/cflow/internal/fileio"
)

// Write exports m to path as GGUF v3. The file appears only when complete:
// bytes go to a temp file beside path, renamed over it at the end; on any
// error the temp file is removed. Errors name the tensor.
func Write(m *cflowfmt.Model, path string, opt Options) (err error) {
	if err := Supported(m); err != nil {
		return err
	}
	ts, err := tensors(m, opt)
	if err != nil {
		return err
	}
	kvs, err := metadata(m, opt)
	if err != nil {
		return err
	}

	w, err := fileio.CreateSink(path)
	if err != nil {
		return err
	}
	defer w.Abort() // no-op after Commit
	n, err := writeHeader(w, kvs, ts)
	if err != nil {
		return err
	}
	if _, err = w.Write(make([]byte, alignUp(n)-n)); err != nil {
		return err
	}
	var buf []byte
	var total, done int64
	for i := range ts {
		total += ts[i].size()
	}
	for i := range ts {
		t := &ts[i]
		size := t.size()
		if int64(cap(buf)) < size {
			buf = make([]byte, size)
		}
		b := buf[:size]
		clear(b)
		if err = t.fill(b); err != nil {
			return fmt.Errorf("gguf: tensor %s: %w", t.name, err)
		}
		if _, err = w.Write(b); err != nil {
			return err
		}
		if _, err = w.Write(make([]byte, alignUp(size)-size)); err != nil {
			return err
		}
		if done += size; opt.Progress != nil {
			opt.Progress(done, total)
		}
	}
	return w.Commit()
}

// writeHeader writes magic, version, counts, the KV section and the tensor
// infos (offsets relative to the aligned data start), returning the bytes
// written.
func writeHeader(w io.Writer, kvs kvList, ts []tensor) (int64, error) {
	le := binary.LittleEndian
	b := []byte(Magic)
	b = le.AppendUint32(b, Version)
	b = le.AppendUint64(b, uint64(len(ts)))
	b = le.AppendUint64(b, uint64(len(kvs)))
	for _, e := range kvs {
		b = appendString(b, e.key)
		b = append(b, e.val...)
	}
	var off int64
	for i := range ts {
		t := &ts[i]
		b = appendString(b, t.name)
		b = le.AppendUint32(b, uint32(len(t.dims)))
		for _, d := range t.dims {
			b = le.AppendUint64(b, d)
		}
		b = le.AppendUint32(b, uint32(t.typ))
		b = le.AppendUint64(b, uint64(off))
		off = alignUp(off + t.size())
	}
	_, err := w.Write(b)
	return int64(len(b)), err
}

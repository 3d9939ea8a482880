package gguf_test

import (
	"reflect"

	"github.com/cflow-dev/cflow/gguf"
)

// The tests read the files the writer makes through the production reader
// (gguf.Parse), which is itself held to files llama.cpp's own gguf-py writer
// and tools made (read_test.go), not to this package's writer. This file
// adapts its result to the loose shape the older tests use.

type ggufKV struct {
	typ   uint32
	value any // uint32, int32, float32, bool, string, uint64, []any
}

type ggufTensor struct {
	name   string
	dims   []uint64
	typ    uint32
	offset uint64
	data   []byte
}

type ggufFile struct {
	version   uint32
	kv        map[string]ggufKV
	kvOrder   []string
	tensors   []ggufTensor
	byName    map[string]*ggufTensor
	dataStart int
	alignment int
}

func parseGGUF(b []byte) (*ggufFile, error) {
	f, err := gguf.Parse(b)
	if err != nil {
		return nil, err
	}
	g := &ggufFile{version: f.Version, kv: map[string]ggufKV{}, byName: map[string]*ggufTensor{},
		dataStart: int(f.DataOffset), alignment: int(f.Alignment)}
	for _, e := range f.KVs {
		v := e.Value.Any()
		if e.Value.Type == gguf.TypeArray {
			rv := reflect.ValueOf(v)
			a := make([]any, rv.Len())
			for i := range a {
				a[i] = rv.Index(i).Interface()
			}
			v = a
		}
		g.kv[e.Key] = ggufKV{uint32(e.Value.Type), v}
		g.kvOrder = append(g.kvOrder, e.Key)
	}
	for i := range f.Tensors {
		t := &f.Tensors[i]
		data, err := f.TensorData(t)
		if err != nil {
			return nil, err
		}
		g.tensors = append(g.tensors, ggufTensor{t.Name, t.Dims, uint32(t.Type), t.Offset, data})
	}
	for i := range g.tensors {
		g.byName[g.tensors[i].name] = &g.tensors[i]
	}
	return g, nil
}

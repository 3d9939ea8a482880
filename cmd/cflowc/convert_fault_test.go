package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestConvertInputTruncated (issue 19 item 6): an input truncated while
// convert has it mapped is exit 2 with one line naming the file, and no
// output, instead of a SIGBUS crash. The truncation happens at a fixed
// point without timing: --tokenizer names a FIFO, which convert opens just
// after mapping the checkpoint; the writer side's open returns only then.
func TestConvertInputTruncated(t *testing.T) {
	dir := t.TempDir()
	raw, err := os.ReadFile("../../models/stories260K.bin")
	if err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(dir, "stories.bin")
	if err := os.WriteFile(in, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "tok.bin")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	go func() {
		w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err != nil {
			t.Error(err)
			return
		}
		defer w.Close()
		if err := os.Truncate(in, 4096); err != nil {
			t.Error(err)
		}
		tok := binary.LittleEndian.AppendUint32(nil, 4) // llama2.c score table, 512 ids
		for i := 0; i < 512; i++ {
			piece := fmt.Sprint(i)
			tok = binary.LittleEndian.AppendUint32(tok, 0)
			tok = binary.LittleEndian.AppendUint32(tok, uint32(len(piece)))
			tok = append(tok, piece...)
		}
		w.Write(tok)
	}()
	out := filepath.Join(dir, "o.cflow")
	var stderr bytes.Buffer
	code := runMain([]string{"cflowc", "convert", "-q", "--tokenizer", fifo, "-o", out, in}, &stderr)
	msg := stderr.String()
	if code != exitUsage || !strings.Contains(msg, in+": offset ") || !strings.Contains(msg, "truncated or replaced while open") || strings.Count(msg, "\n") != 1 {
		t.Fatalf("exit %d, stderr %q; want exit 2 and one line naming %s and the fault", code, msg, in)
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "o.cflow") {
			t.Fatalf("a failed conversion left %s", e.Name())
		}
	}
}

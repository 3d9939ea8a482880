package tokenizer

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"
	"unicode/utf8"
)

// Llama2c is llama.c's SentencePiece-derived tokenizer: a table of pieces
// with merge scores (tokenizer.bin), byte fallback ids 3..258 for
// <0x00>..<0xFF>, and a leading-space dummy prefix.
type Llama2c struct {
	pieces   []string
	scores   []float32
	index    map[string]int
	bos, eos int
	size     int // bytes of the table read
}

// NewLlama2c parses a tokenizer.bin image: i32 max token length, then per
// id f32 score, i32 length, bytes. bos/eos < 0 take llama2.c's 1 and 2.
func NewLlama2c(data []byte, vocab, bos, eos int) (*Llama2c, error) {
	t := &Llama2c{index: map[string]int{}, bos: bos, eos: eos}
	if t.bos < 0 {
		t.bos = 1
	}
	if t.eos < 0 {
		t.eos = 2
	}
	if len(data) < 4 {
		return nil, fmt.Errorf("llama2c tokenizer: %d bytes", len(data))
	}
	off := 4
	for i := 0; i < vocab; i++ {
		if len(data)-off < 8 {
			return nil, fmt.Errorf("llama2c tokenizer: entry %d truncated at byte %d", i, off)
		}
		score := math.Float32frombits(binary.LittleEndian.Uint32(data[off:]))
		n := int(int32(binary.LittleEndian.Uint32(data[off+4:])))
		off += 8
		if n < 0 || n > len(data)-off {
			return nil, fmt.Errorf("llama2c tokenizer: entry %d length %d runs past the data", i, n)
		}
		p := string(data[off : off+n])
		off += n
		t.pieces = append(t.pieces, p)
		t.size = off
		t.scores = append(t.scores, score)
		if _, dup := t.index[p]; !dup {
			t.index[p] = i
		}
	}
	return t, nil
}

// Kind implements Tokenizer.
func (t *Llama2c) Kind() string { return "llama2c" }

// BOS implements Tokenizer.
func (t *Llama2c) BOS() int { return t.bos }

// EOS implements Tokenizer.
func (t *Llama2c) EOS() int { return t.eos }

// Encode follows llama2.c's encode(): dummy " " prefix, one id per code
// point (byte fallback +3 for unknown ones), then greedy merges of the
// adjacent pair whose concatenation has the highest score.
func (t *Llama2c) Encode(text string) ([]int, error) {
	var ids []int
	if text != "" {
		if id, ok := t.index[" "]; ok {
			ids = append(ids, id)
		}
	}
	for len(text) > 0 {
		_, n := utf8.DecodeRuneInString(text)
		if id, ok := t.index[text[:n]]; ok {
			ids = append(ids, id)
		} else {
			for i := 0; i < n; i++ {
				ids = append(ids, int(text[i])+3)
			}
		}
		text = text[n:]
	}
	for {
		best, bestID, at := float32(math.Inf(-1)), -1, -1
		for i := 0; i+1 < len(ids); i++ {
			if id, ok := t.index[t.pieces[ids[i]]+t.pieces[ids[i+1]]]; ok && t.scores[id] > best {
				best, bestID, at = t.scores[id], id, i
			}
		}
		if at < 0 {
			return ids, nil
		}
		ids[at] = bestID
		ids = append(ids[:at+1], ids[at+2:]...)
	}
}

// Piece is llama2.c's decode(): the leading space after BOS is dropped and
// <0xXX> pieces are raw bytes.
func (t *Llama2c) Piece(prev, id int) []byte {
	if id < 0 || id >= len(t.pieces) || id == t.bos || id == t.eos {
		return nil
	}
	p := t.pieces[id]
	if prev == t.bos {
		p = strings.TrimPrefix(p, " ")
	}
	var b byte
	if len(p) == 6 && strings.HasPrefix(p, "<0x") && p[5] == '>' {
		if _, err := fmt.Sscanf(p, "<0x%02X>", &b); err == nil {
			return []byte{b}
		}
	}
	return []byte(p)
}

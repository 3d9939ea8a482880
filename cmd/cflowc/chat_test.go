package main

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/cflow-dev/cflow/cflowfmt"
	"github.com/cflow-dev/cflow/cflowfmt/tokmeta"
	"github.com/cflow-dev/cflow/chat"
	"github.com/cflow-dev/cflow/vflowfmt"
)

// runIO runs the app with stdin and returns its exit code and stdout.
func runIO(t *testing.T, stdin string, args ...string) (int, string) {
	t.Helper()
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	go func() { io.WriteString(inW, stdin); inW.Close() }()
	oldIn := os.Stdin
	os.Stdin = inR
	var code int
	out := stdoutOf(t, func() { code = runApp(args...) })
	os.Stdin = oldIn
	inR.Close()
	return code, out
}

// gpt2Bytes is GPT-2's bytes_to_unicode, to write a byte-level vocabulary.
func gpt2Bytes() [256]rune {
	var br [256]rune
	n := 0
	for b := 0; b < 256; b++ {
		if b >= '!' && b <= '~' || b >= 0xA1 && b <= 0xAC || b >= 0xAE {
			br[b] = rune(b)
		} else {
			br[b] = rune(256 + n)
			n++
		}
	}
	return br
}

// writeChatTokenizer writes a small byte-level BPE tokenizer.json (ids
// 0–255 bytes, a few merges, ChatML special tokens at 290–292) and a
// tokenizer_config.json carrying template, into dir.
func writeChatTokenizer(t *testing.T, dir, template string) string {
	t.Helper()
	br := gpt2Bytes()
	vocab := map[string]int{}
	for b := 0; b < 256; b++ {
		vocab[string(br[b])] = b
	}
	merges := []string{"h e", "l l", "he ll", "Ġ t", "o u"}
	for i, m := range merges {
		vocab[strings.ReplaceAll(m, " ", "")] = 256 + i
	}
	specials := []string{"<|im_start|>", "<|im_end|>", "<|endoftext|>"}
	var added []map[string]any
	for i, s := range specials {
		added = append(added, map[string]any{"id": 290 + i, "content": s, "special": true})
	}
	tj, _ := json.Marshal(map[string]any{
		"model":         map[string]any{"type": "BPE", "vocab": vocab, "merges": merges},
		"added_tokens":  added,
		"pre_tokenizer": map[string]any{"type": "ByteLevel", "add_prefix_space": false, "use_regex": true},
		"decoder":       map[string]any{"type": "ByteLevel"},
	})
	cj, _ := json.Marshal(map[string]any{"eos_token": "<|im_end|>", "bos_token": nil, "add_bos_token": false, "chat_template": template})
	p := filepath.Join(dir, "tokenizer.json")
	if err := os.WriteFile(p, tj, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tokenizer_config.json"), cj, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// chatModelFile converts the golden llama fixture (vocabulary 300) with
// the ChatML tokenizer and the real Qwen2.5 template attached, its
// context widened to 1024 positions.
func chatModelFile(t *testing.T) string {
	t.Helper()
	tpl, err := os.ReadFile("../../chat/testdata/templates/qwen2.5.jinja")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	tokPath := writeChatTokenizer(t, dir, string(tpl))
	model := filepath.Join(dir, "m.cflow")
	fixture := copyFixture(t, "llama")
	editConfig(t, fixture, "max_position_embeddings", 1024) // room for a conversation
	if code := runApp("convert", fixture, "-o", model, "--quant", "f32", "--quiet", "--tokenizer", tokPath); code != 0 {
		t.Fatalf("convert --tokenizer: exit %d", code)
	}
	return model
}

// TestTokenizeChatCLI: tokenize --chat renders what jinja2 renders
// (chat/testdata/golden, from python3-jinja2) and its ids are the
// tokenizer's encoding of that text, special tokens as single ids;
// --detokenize turns them back; --no-special spells them out.
func TestTokenizeChatCLI(t *testing.T) {
	model := chatModelFile(t)
	msgs, err := os.ReadFile("../../chat/testdata/conversations.json")
	if err != nil {
		t.Fatal(err)
	}
	var convs []struct {
		Name     string          `json:"name"`
		Gen      bool            `json:"add_generation_prompt"`
		Messages json.RawMessage `json:"messages"`
	}
	json.Unmarshal(msgs, &convs)
	m, err := vflowfmt.OpenModel(model)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	tk, err := tokmeta.Load(m.Meta, int(m.Header.VocabSize))
	if err != nil {
		t.Fatal(err)
	}
	tested := 0
	for _, c := range convs {
		if !c.Gen {
			continue
		}
		tested++
		p := filepath.Join(t.TempDir(), c.Name+".json")
		os.WriteFile(p, c.Messages, 0o644)
		code, out := runIO(t, "", "tokenize", model, "--chat", p, "--json")
		if code != 0 {
			t.Fatalf("tokenize --chat: exit %d", code)
		}
		var got struct {
			Text string `json:"text"`
			IDs  []int  `json:"ids"`
			BOS  int    `json:"bos"`
		}
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("%v: %q", err, out)
		}
		want, _ := os.ReadFile("../../chat/testdata/golden/qwen2.5." + c.Name + ".txt")
		if got.Text != string(want) {
			t.Fatalf("%s: rendered\n%q\nwant (jinja2)\n%q", c.Name, got.Text, want)
		}
		ids, _ := tk.Encode(string(want))
		if fmt.Sprint(ids) != fmt.Sprint(got.IDs) || got.IDs[0] != 290 {
			t.Fatalf("%s: ids %v want %v (bos %d)", c.Name, got.IDs, ids, got.BOS)
		}
		// --detokenize gives the text back, special tokens written out.
		idFile := filepath.Join(t.TempDir(), "ids.txt")
		os.WriteFile(idFile, []byte(out), 0o644)
		if code, text := runIO(t, "", "tokenize", model, "--text", idFile, "--detokenize"); code != 0 || text != string(want) {
			t.Fatalf("detokenize: exit %d, %q", code, text)
		}
	}
	if tested == 0 {
		t.Fatal("no conversation with add_generation_prompt")
	}
	code, out := runIO(t, "<|im_end|>", "tokenize", model, "--text", "-", "--no-special")
	if code != 0 || strings.Contains(out, "291") || len(strings.Fields(out)) < 5 {
		t.Fatalf("--no-special: exit %d, %q", code, out)
	}
	if code, out := runIO(t, "<|im_end|>", "tokenize", model, "--text", "-"); code != 0 || strings.TrimSpace(out) != "291" {
		t.Fatalf("special token in text: exit %d, %q", code, out)
	}
}

// TestChatThreeTurns: chat holds a three-turn conversation from piped
// stdin. Each turn's prompt is the whole conversation so far rendered by
// the template (prompt_tokens counts it, computed here independently with
// the chat package), and the third reply is what run gives greedily for
// that prompt's ids.
func TestChatThreeTurns(t *testing.T) {
	model := chatModelFile(t)
	code, out := runIO(t, "Hello there\n/reset\nHi\nHow are you?\nTell me more.\n",
		"chat", model, "--system", "Be brief.", "--json", "--temperature", "0", "--max-tokens", "6", "--threads", "2")
	if code != 0 {
		t.Fatalf("chat: exit %d", code)
	}
	type turn struct {
		User, Reply  string
		PromptTokens int `json:"prompt_tokens"`
		Finish       string
	}
	var turns []turn
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var tr turn
		if err := json.Unmarshal([]byte(l), &tr); err != nil {
			t.Fatalf("%v: %q", err, l)
		}
		turns = append(turns, tr)
	}
	if len(turns) != 4 {
		t.Fatalf("%d turns: %q", len(turns), out)
	}
	turns = turns[1:] // the first was forgotten by /reset
	m, err := vflowfmt.OpenModel(model)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	cm, err := chat.OpenModel(m.Meta, int(m.Header.VocabSize))
	if err != nil {
		t.Fatal(err)
	}
	// tokenizer_config.json's eos_token <|im_end|> (291) is the EOS; the
	// fixture config.json's eos_token_id 2 and <|endoftext|> (292) stay
	// stop ids.
	if eos := m.Meta.U32(cflowfmt.KeyEOS, 0); eos != 291 || fmt.Sprint(m.Meta.U32s(cflowfmt.KeyEndOfTurn)) != "[2 291 292]" {
		t.Fatalf("eos %d, stop ids %v, eot %v", eos, cm.StopIDs, m.Meta.U32s(cflowfmt.KeyEndOfTurn))
	}
	msgs := []chat.Message{{Role: "system", Content: "Be brief."}}
	var last []int
	for i, tr := range turns {
		msgs = append(msgs, chat.Message{Role: "user", Content: tr.User})
		ids, err := cm.Prompt(msgs)
		if err != nil {
			t.Fatal(err)
		}
		if tr.PromptTokens != len(ids) {
			t.Fatalf("turn %d: prompt %d tokens, the rendered conversation is %d", i, tr.PromptTokens, len(ids))
		}
		msgs = append(msgs, chat.Message{Role: "assistant", Content: tr.Reply})
		last = ids
	}
	var s []string
	for _, id := range last {
		s = append(s, strconv.Itoa(id))
	}
	code, runOut := runIO(t, "", "run", model, "--prompt-ids", strings.Join(s, ","), "--temperature", "0", "--max-tokens", "6", "--threads", "2")
	if code != 0 {
		t.Fatalf("run: exit %d", code)
	}
	// chat keeps (and prints in JSON) the reply with invalid UTF-8
	// replaced; run prints raw bytes.
	if want := strings.ToValidUTF8(strings.TrimSuffix(runOut, "\n"), "\uFFFD"); !strings.HasSuffix(want, turns[2].Reply) || turns[2].Reply == "" && turns[2].Finish == "max tokens" {
		t.Fatalf("third reply %q; run on the same prompt printed %q", turns[2].Reply, runOut)
	}
}

// TestChatReusesTheConversation: with one-token replies each prompt
// extends what the engine holds (the reply token was sampled but not fed),
// so turns 2 and 3 feed only their new tokens; the third reply still equals
// run's greedy reply to the whole prompt fed from scratch.
func TestChatReusesTheConversation(t *testing.T) {
	model := chatModelFile(t)
	code, out := runIO(t, "Hi\nAnd?\nOK.\n", "chat", model, "--json", "--temperature", "0", "--max-tokens", "1", "--threads", "2")
	if code != 0 {
		t.Fatalf("chat: exit %d", code)
	}
	type turn struct {
		User, Reply  string
		PromptTokens int `json:"prompt_tokens"`
		Reused       int `json:"reused_tokens"`
	}
	var turns []turn
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var tr turn
		if err := json.Unmarshal([]byte(l), &tr); err != nil {
			t.Fatalf("%v: %q", err, l)
		}
		turns = append(turns, tr)
	}
	if len(turns) != 3 || turns[0].Reused != 0 || turns[1].Reused != turns[0].PromptTokens || turns[2].Reused != turns[1].PromptTokens {
		t.Fatalf("turns %+v: want each turn to reuse the previous prompt", turns)
	}
	m, err := vflowfmt.OpenModel(model)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	cm, err := chat.OpenModel(m.Meta, int(m.Header.VocabSize))
	if err != nil {
		t.Fatal(err)
	}
	var msgs []chat.Message
	for _, tr := range turns[:2] {
		msgs = append(msgs, chat.Message{Role: "user", Content: tr.User}, chat.Message{Role: "assistant", Content: tr.Reply})
	}
	ids, err := cm.Prompt(append(msgs, chat.Message{Role: "user", Content: turns[2].User}))
	if err != nil {
		t.Fatal(err)
	}
	var s []string
	for _, id := range ids {
		s = append(s, strconv.Itoa(id))
	}
	code, runOut := runIO(t, "", "run", model, "--prompt-ids", strings.Join(s, ","), "--temperature", "0", "--max-tokens", "1", "--threads", "2")
	if want := strings.ToValidUTF8(strings.TrimSuffix(runOut, "\n"), "\uFFFD"); code != 0 || !strings.HasSuffix(want, turns[2].Reply) {
		t.Fatalf("third reply %q; run from scratch printed %q (exit %d)", turns[2].Reply, runOut, code)
	}
}

// llama2cModel writes a tiny llama2.c checkpoint (random weights, shared
// classifier) with the given vocabulary.
func llama2cModel(t *testing.T, path string, vocab int) {
	t.Helper()
	dim, hidden, layers, heads, kv, seq := 16, 32, 1, 2, 2, 32
	hd := dim / heads
	floats := vocab*dim + layers*(dim+dim*dim+2*dim*kv*hd+dim*dim+dim+3*hidden*dim) + dim + seq*hd
	b := make([]byte, 0, 28+4*floats)
	for _, v := range []int{dim, hidden, layers, heads, kv, vocab, seq} {
		b = binary.LittleEndian.AppendUint32(b, uint32(v))
	}
	r := rand.New(rand.NewSource(9))
	for i := 0; i < floats; i++ {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(float32(r.NormFloat64()*0.3)))
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestLlama2cTokenizerRun: a llama2.c checkpoint converted with
// --tokenizer (a score table written here: <unk>, <s>, </s>, the 256 byte
// pieces, then letters and merges) takes --prompt text and prints text:
// the prompt comes back as text, not ids.
func TestLlama2cTokenizerRun(t *testing.T) {
	dir := t.TempDir()
	pieces := []string{"<unk>", "<s>", "</s>"}
	for b := 0; b < 256; b++ {
		pieces = append(pieces, fmt.Sprintf("<0x%02X>", b))
	}
	for _, p := range []string{" ", "h", "e", "l", "o", "w", "r", "d", " h", "he", "ll", " he", " hell", " hello", " w", " wor", "or", " world"} {
		pieces = append(pieces, p)
	}
	table := binary.LittleEndian.AppendUint32(nil, 8)
	for i, p := range pieces {
		table = binary.LittleEndian.AppendUint32(table, math.Float32bits(float32(i)))
		table = binary.LittleEndian.AppendUint32(table, uint32(len(p)))
		table = append(table, p...)
	}
	tok := filepath.Join(dir, "tok277.bin")
	os.WriteFile(tok, table, 0o644)
	bin := filepath.Join(dir, "m.bin")
	llama2cModel(t, bin, len(pieces))
	model := filepath.Join(dir, "m.cflow")
	if code := runApp("convert", bin, "-o", model, "--quiet"); code != 0 {
		t.Fatalf("convert: exit %d", code)
	}
	if code, _ := runIO(t, "", "run", model, "--prompt", "hello world"); code != exitUsage {
		t.Fatalf("--prompt without a tokenizer: exit %d", code)
	}
	if code := runApp("convert", bin, "-o", model, "--quiet", "--tokenizer", tok); code != 0 {
		t.Fatalf("convert --tokenizer: exit %d", code)
	}
	code, out := runIO(t, "", "run", model, "--prompt", "hello world", "--max-tokens", "3", "--temperature", "0", "--threads", "1")
	if code != 0 || !strings.HasPrefix(out, "hello world") {
		t.Fatalf("run --prompt: exit %d, %q", code, out)
	}
	// A table for another vocabulary is refused, exit 2, no file.
	bad := filepath.Join(dir, "bad.cflow")
	if code := runApp("convert", bin, "-o", bad, "--quiet", "--tokenizer", filepath.Join(dir, "m.bin")); code != exitUsage {
		t.Fatalf("convert with a bad table: exit %d", code)
	}
	if _, err := os.Stat(bad); err == nil {
		t.Fatal("output written for a bad tokenizer")
	}
}

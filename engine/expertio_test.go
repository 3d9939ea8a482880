package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cflow-dev/cflow/convert"
	"github.com/cflow-dev/cflow/engine/expertio"
	"github.com/cflow-dev/cflow/quant"
	"github.com/cflow-dev/cflow/vflowfmt"
	"golang.org/x/sys/unix"
)

// ConvertFixtureDirect lets the external arm test share the helper.
var ConvertFixtureDirect = convertFixtureDirect

// convertFixtureDirect converts golden fixture name (Q4_0) to ext in a
// directory whose filesystem takes O_DIRECT — t.TempDir() when it does,
// else one under the repository's ignored out/ — and reports whether one
// was found (without, the staged arms run on the buffered-pread fallback).
func convertFixtureDirect(t *testing.T, name, ext string) (path string, direct bool) {
	t.Helper()
	dir, direct := t.TempDir(), false
	if directWorks(t, dir) {
		direct = true
	} else if err := os.MkdirAll("../out", 0o755); err == nil {
		if d, err := os.MkdirTemp("../out", "expertio-test-"); err == nil {
			t.Cleanup(func() { os.RemoveAll(d) })
			if directWorks(t, d) {
				dir, direct = d, true
			}
		}
	}
	if !direct {
		t.Logf("no O_DIRECT filesystem for test files (%s is not one): the staged arms use buffered pread", dir)
	}
	path = filepath.Join(dir, name+ext)
	if _, err := convert.Convert(context.Background(), filepath.Join("../golden/fixtures", name), path,
		convert.Options{Quant: quant.Q4_0, NUMANodes: 1, Workers: 1}); err != nil {
		t.Fatalf("convert %s: %v", name, err)
	}
	return path, direct
}

func directWorks(t *testing.T, dir string) bool {
	t.Helper()
	p := filepath.Join(dir, "odirect-probe")
	const align = 4096 // every logical sector size O_DIRECT asks for
	if err := os.WriteFile(p, make([]byte, 2*align), 0o644); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(p)
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_DIRECT, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	buf, err := unix.Mmap(-1, 0, align, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE) // page-aligned
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(buf)
	_, err = unix.Pread(fd, buf, 0)
	return err == nil
}

// TestStagingSlotNeverReusedInFlight: with a slow injected reader, no
// staging buffer is handed out, read into by a second read, or fed to the
// kernels while a read into it is in flight (an observer independent of
// the pending counts tracks every read's buffer), and the logits stay
// bit-identical to the mmap engine's. One read fails mid-token, so that
// token returns the error with later layers' reads still in flight (held
// by a gate); the retry of the token must recycle those slots, and the
// gate opens only once put is waiting on a pending read — the guarded
// path is exercised deterministically.
func TestStagingSlotNeverReusedInFlight(t *testing.T) {
	path, _ := convertFixtureDirect(t, "arch2_4_combined", ".cflow")
	m, err := vflowfmt.OpenModel(path)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ref := newEngine(t, m, 2)
	failTok := 2
	injected := errors.New("injected read failure")
	gate := make(chan struct{})
	var gateOnce sync.Once
	var (
		mu         sync.Mutex
		failing    bool              // stepping failTok the first time
		gets       int               // slots handed out while failing
		role       = map[*byte]int{} // buffer → 1 fail, 2 hold at the gate
		inflight   = map[*byte]bool{}
		reads      int
		violations []string
		overlapped int // kernels used a buffer while another read was in flight
	)
	openGate := func() { gateOnce.Do(func() { close(gate) }) }
	read := func(fd int, p []byte, off int64) (int, error) {
		mu.Lock()
		b := &p[0]
		r := role[b]
		delete(role, b)
		reads++
		if inflight[b] {
			violations = append(violations, fmt.Sprintf("read %d into a buffer already being read", reads))
		}
		inflight[b] = true
		mu.Unlock()
		defer func() {
			mu.Lock()
			delete(inflight, b)
			mu.Unlock()
		}()
		switch r {
		case 1:
			return 0, injected
		case 2:
			<-gate // the failing token's later layers stay in flight
		}
		time.Sleep(200 * time.Microsecond) // slow storage
		return expertio.ReadFull(fd, p, off)
	}
	// The observer runs on the decode thread: "get" precedes each issue, so
	// while failing the first slot (layer 0's first expert) fails and every
	// slot after layer 0's is held at the gate.
	observe := func(ev string, buf []byte) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case ev == "wait":
			failing = false
			openGate()
			return
		case ev == "get" && failing:
			if gets == 0 {
				role[&buf[0]] = 1
			} else if gets >= int(m.Header.TopK) {
				role[&buf[0]] = 2
			}
			gets++
		}
		if inflight[&buf[0]] {
			violations = append(violations, fmt.Sprintf("%s of a buffer with a read in flight", ev))
		}
		if ev == "use" && len(inflight) > 0 {
			overlapped++
		}
	}
	e, err := New(m, Options{Threads: 2, ExpertIO: expertio.Direct, Kernel: testKernel,
		xioHooks: expertio.Hooks{Read: read, Observe: observe}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	defer openGate()
	for i, tok := range testTokens {
		want, err := ref.Step(tok)
		if err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		failing = i == failTok
		mu.Unlock()
		got, err := e.Step(tok)
		if i == failTok {
			if !errors.Is(err, injected) {
				t.Fatalf("token %d: err %v, want the injected read failure", i, err)
			}
			if e.Pos() != i {
				t.Fatalf("failed step moved the position to %d", e.Pos())
			}
			got, err = e.Step(tok)
		}
		if err != nil {
			t.Fatalf("token %d: %v", i, err)
		}
		for j := range want {
			if math.Float32bits(got[j]) != math.Float32bits(want[j]) {
				t.Fatalf("token %d logit %d = %v, mmap %v", i, j, got[j], want[j])
			}
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(violations) > 0 {
		t.Fatalf("staging buffers reused in flight: %v", violations)
	}
	sc := e.xio.Slots()
	if sc.WaitedPuts == 0 {
		t.Fatal("no slot was freed with a read pending: the guard was not exercised")
	}
	if sc.Free != sc.Allocated || reads <= sc.Allocated {
		t.Fatalf("%d of %d slots free after decoding, %d reads: slots leak or are not recycled", sc.Free, sc.Allocated, reads)
	}
	t.Logf("%d reads, %d puts waited on a pending read, %d slots, %d expert computations overlapped a read", reads, sc.WaitedPuts, sc.Allocated, overlapped)
}

// TestExpertIOFallback: when O_DIRECT is refused with EINVAL (a filesystem
// without direct I/O), the staged tier reads with buffered pread, says so
// and why, and still decodes bit-identically to mmap.
func TestExpertIOFallback(t *testing.T) {
	path, _ := convertFixtureDirect(t, "arch4_async_experts", ".vflow")
	m, err := vflowfmt.OpenModel(path)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ref := newEngine(t, m, 1)
	refuse := func(string) (int, error) { return -1, unix.EINVAL }
	e, err := New(m, Options{Threads: 1, ExpertIO: expertio.Direct, Kernel: testKernel, xioHooks: expertio.Hooks{OpenDirect: refuse}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	for i, tok := range testTokens {
		want, err := ref.Step(tok)
		if err != nil {
			t.Fatal(err)
		}
		got, err := e.Step(tok)
		if err != nil {
			t.Fatal(err)
		}
		for j := range want {
			if math.Float32bits(got[j]) != math.Float32bits(want[j]) {
				t.Fatalf("token %d logit %d = %v, mmap %v", i, j, got[j], want[j])
			}
		}
	}
	st := e.ExpertIOStats()
	if d := st.Describe(); st.Direct || st.Reads == 0 || !strings.Contains(d, "buffered pread") || !strings.Contains(d, "invalid argument") {
		t.Fatalf("fallback stats %+v, described %q", st, d)
	}
}

// TestStagedBatchReadFailure: a read that fails inside a batched prefill
// with staged experts fails the prefill with that error and leaves the
// sequence where it was, every staging slot back on the free list (none
// leaked to a routing the driver still holds); the retry prefills to the
// mmap engine's logits bit for bit and again frees every slot.
func TestStagedBatchReadFailure(t *testing.T) {
	path, _ := convertFixtureDirect(t, "arch2_4_combined", ".cflow")
	m, err := vflowfmt.OpenModel(path)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	toks := make([]int, 40)
	for i := range toks {
		toks[i] = (i*37 + 11) % int(m.Header.VocabSize)
	}
	ref, err := New(m, Options{Threads: 2, Kernel: testKernel, Batch: 16})
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	want, err := ref.Prefill(toks)
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []expertio.Mode{expertio.Sync, expertio.Direct} {
		injected := errors.New("injected read failure")
		var mu sync.Mutex
		reads := 0
		read := func(fd int, p []byte, off int64) (int, error) {
			mu.Lock()
			reads++
			n := reads
			mu.Unlock()
			if n == 5 { // inside the first batch, after a routing or two
				return 0, injected
			}
			return expertio.ReadFull(fd, p, off)
		}
		e, err := New(m, Options{Threads: 2, ExpertIO: mode, Kernel: testKernel, Batch: 16, xioHooks: expertio.Hooks{Read: read}})
		if err != nil {
			t.Fatal(err)
		}
		freed := func(when string) {
			t.Helper()
			if sc := e.xio.Slots(); sc.Free != sc.Allocated || len(e.xbatches) != 0 {
				t.Fatalf("%s %s: %d of %d slots free, %d routings held", mode, when, sc.Free, sc.Allocated, len(e.xbatches))
			}
		}
		if _, err := e.Prefill(toks); !errors.Is(err, injected) {
			t.Fatalf("%s: prefill err %v, want the injected read failure", mode, err)
		}
		if e.Pos() != 0 {
			t.Fatalf("%s: failed prefill moved the position to %d", mode, e.Pos())
		}
		freed("after the failure")
		got, err := e.Prefill(toks)
		if err != nil {
			t.Fatalf("%s retry: %v", mode, err)
		}
		for j := range want {
			if math.Float32bits(got[j]) != math.Float32bits(want[j]) {
				t.Fatalf("%s retry: logit %d = %v, mmap %v", mode, j, got[j], want[j])
			}
		}
		freed("after the retry")
		e.Close()
	}
}

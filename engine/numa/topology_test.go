package numa

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

func TestParse(t *testing.T) {
	for _, c := range []struct {
		in, canon string
		nodes     []Node
	}{
		{"0:0;1:1", "0:0;1:1", []Node{{0, []int{0}}, {1, []int{1}}}},
		{"0:0-3;1:4-7", "0:0-3;1:4-7", []Node{{0, []int{0, 1, 2, 3}}, {1, []int{4, 5, 6, 7}}}},
		{" 1 : 4-5,9 ; 0:0,2 ;", "0:0,2;1:4-5,9", []Node{{0, []int{0, 2}}, {1, []int{4, 5, 9}}}},
		{"3:0-1,1", "3:0-1", []Node{{3, []int{0, 1}}}},
	} {
		tp, err := Parse(c.in)
		if err != nil {
			t.Fatalf("%q: %v", c.in, err)
		}
		if !reflect.DeepEqual(tp.Nodes, c.nodes) || tp.String() != c.canon || tp.Source != EnvTopology {
			t.Errorf("%q: %+v %q", c.in, tp.Nodes, tp.String())
		}
	}
}

func TestParseErrors(t *testing.T) {
	for in, want := range map[string]string{
		"":          "no nodes",
		"0":         "not NODE:CPULIST",
		"x:1":       "not a non-negative integer",
		"-1:1":      "not a non-negative integer",
		"0:":        "node 0 has no CPUs",
		"0:3-1":     `"3-1" is not a CPU or an ascending range`,
		"0:a":       `"a" is not a CPU`,
		"0:0;0:1":   "node 0 listed twice",
		"0:0-2;1:2": "CPU 2 belongs to node 0 and node 1",
		"0:0-99999": "below 65536",
	} {
		_, err := Parse(in)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want it to say %q", in, err, want)
		}
	}
}

// TestFromSysfs reads a fake sysfs tree: memory-only nodes (empty cpulist)
// and non-node entries are left out, nodes come out in id order.
func TestFromSysfs(t *testing.T) {
	root := t.TempDir()
	for name, list := range map[string]string{"node0": "0-3,8\n", "node10": "4-7\n", "node2": "\n"} {
		if err := os.MkdirAll(filepath.Join(root, name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, name, "cpulist"), []byte(list), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(root, "online"), []byte("0,2,10\n"), 0o644)
	tp, err := FromSysfs(root)
	if err != nil {
		t.Fatal(err)
	}
	if tp.String() != "0:0-3,8;10:4-7" || tp.Source != "sysfs" {
		t.Fatalf("got %q (%s)", tp.String(), tp.Source)
	}
	if _, err := FromSysfs(t.TempDir()); err == nil {
		t.Fatal("empty tree: no error")
	}
}

func TestDetectEnv(t *testing.T) {
	t.Setenv(EnvTopology, "0:0;1:1")
	if tp, err := Detect(); err != nil || tp.String() != "0:0;1:1" {
		t.Fatalf("%v %v", tp, err)
	}
	t.Setenv(EnvTopology, "0:0;;1")
	if _, err := Detect(); err == nil || !strings.HasPrefix(err.Error(), EnvTopology) {
		t.Fatalf("bad env: %v", err)
	}
}

// TestPin: a locked thread pinned to one allowed CPU is, per the kernel,
// allowed only that CPU; a CPU the machine lacks is refused clearly.
func TestPin(t *testing.T) {
	cpus, err := Allowed()
	if err != nil || len(cpus) == 0 {
		t.Fatalf("allowed %v %v", cpus, err)
	}
	c := cpus[len(cpus)-1]
	done := make(chan error)
	go func() {
		runtime.LockOSThread() // never unlocked: the pinned thread dies with the goroutine
		if err := Pin([]int{c}); err != nil {
			done <- err
			return
		}
		var set unix.CPUSet
		if err := unix.SchedGetaffinity(0, &set); err != nil {
			done <- err
			return
		}
		if set.Count() != 1 || !set.IsSet(c) {
			done <- errors.New("affinity is not the pinned CPU")
			return
		}
		done <- Pin([]int{1023})
	}()
	if err := <-done; err == nil || !strings.Contains(err.Error(), "CPUs 1023") {
		t.Fatalf("pin to a missing CPU: %v", err)
	}
}

// TestKernelPlacer: MPOL_BIND to node 0 on a shared file mapping succeeds
// and the kernel reports the policy back (get_mempolicy); a memory node the
// machine lacks is skipped with ErrNoMemoryNode, not passed to mbind.
func TestKernelPlacer(t *testing.T) {
	ps := os.Getpagesize()
	f, err := os.Create(filepath.Join(t.TempDir(), "w"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.Write(make([]byte, 3*ps))
	b, err := unix.Mmap(int(f.Fd()), 0, 3*ps, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(b)
	base := uintptr(unsafe.Pointer(&b[0]))
	addr, n := PageSpan(base+100, uintptr(ps))
	if addr != base || n != uintptr(2*ps) {
		t.Fatalf("PageSpan: %#x+%d", addr, n)
	}
	rec := &Recorder{Next: NewKernel()}
	if err := rec.Place(Request{Kind: InPlace, What: "test", Node: 0, Mem: []int{0}, Addr: addr, Len: n}); err != nil {
		t.Fatalf("mbind node 0: %v", err)
	}
	var mode int32
	mask := make([]uint64, 16)
	const mpolFAddr = 2
	if _, _, e := unix.Syscall6(unix.SYS_GET_MEMPOLICY, uintptr(unsafe.Pointer(&mode)), uintptr(unsafe.Pointer(&mask[0])),
		uintptr(len(mask)*64), base+uintptr(ps), mpolFAddr, 0); e != 0 {
		t.Fatal(e)
	}
	if mode != MpolBind || mask[0] != 1 {
		t.Fatalf("kernel policy mode %d mask %#x, want MPOL_BIND on node 0", mode, mask[0])
	}
	missing := 0
	for _, id := range MemoryNodes() {
		if id == missing {
			missing++
		}
	}
	err = rec.Place(Request{Kind: InPlace, What: "test", Node: 1, Mem: []int{missing}, Addr: addr, Len: n})
	if !errors.Is(err, ErrNoMemoryNode) {
		t.Fatalf("node %d: %v", missing, err)
	}
	if l := rec.Log(); len(l) != 2 || l[0].Err != nil || !errors.Is(l[1].Err, ErrNoMemoryNode) {
		t.Fatalf("recorder log %+v", l)
	}
}

// TestSplitThreads: workers go to nodes in proportion to their CPUs
// (rounded), every node gets at least one, the caller is not counted
// among them, and threads ≤ 0 means one worker per CPU less the caller.
func TestSplitThreads(t *testing.T) {
	for _, c := range []struct {
		topo    string
		threads int
		want    []int
	}{
		{"0:0-3;1:4-7", 9, []int{4, 4}},
		{"0:0-3;1:4-7", 3, []int{1, 1}},
		{"0:0-5;1:6-7", 9, []int{6, 2}},
		{"0:0-5;1:6-7", 2, []int{1, 1}}, // one worker in all, but every node needs one
		{"0:0-3;1:4-7", 0, []int{4, 4}}, // 8 CPUs: 7 workers, rounded per node
		{"0:0;1:1;2:2", 4, []int{1, 1, 1}},
	} {
		topo, err := Parse(c.topo)
		if err != nil {
			t.Fatal(err)
		}
		if got := topo.SplitThreads(c.threads); !slices.Equal(got, c.want) {
			t.Errorf("%s with %d threads: %v, want %v", c.topo, c.threads, got, c.want)
		}
	}
}

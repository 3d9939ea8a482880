package fileio

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A child process (this test binary, re-executed) opens a sink and writes
// until it is killed; the parent checks what the death left behind.
const sinkChildEnv = "CFLOW_SINK_CHILD"

// childLifetime bounds a child the parent fails to kill.
const childLifetime = 2 * time.Minute

// waitDeath waits for a signalled child; a child still alive after a few
// seconds was started with that signal ignored (Go keeps an inherited
// SIGHUP/SIGINT/SIGQUIT ignore), so it is killed and false returned.
func waitDeath(cmd *exec.Cmd) bool {
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-time.After(5 * time.Second):
		cmd.Process.Kill()
		<-done
		return false
	}
}

func TestMain(m *testing.M) {
	if spec := os.Getenv(sinkChildEnv); spec != "" {
		mode, path, _ := strings.Cut(spec, ":")
		s, err := createSink(path, mode == "unnamed")
		if err != nil {
			os.Stdout.WriteString("error " + err.Error() + "\n")
			os.Exit(1)
		}
		s.Write(make([]byte, 1<<20))
		s.w.Flush()
		os.Stdout.WriteString("ready\n")
		// Until killed, bounded so that a signal this environment ignores
		// (a background job starts with SIGINT and SIGQUIT ignored, nohup
		// with SIGHUP) cannot hang the test binary.
		time.Sleep(childLifetime)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// startChild runs a sink writer for path and waits until it has written.
func startChild(t *testing.T, mode, path string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), sinkChildEnv+"="+mode+":"+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	if line != "ready\n" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("child: %q", line)
	}
	return cmd
}

func entries(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// TestSinkKilledLeavesNothing (issue 19 item 7): a writer killed by
// SIGKILL, SIGHUP, SIGQUIT, SIGTERM or SIGINT in the middle of its output
// leaves no file (the temp is unnamed until Commit).
func TestSinkKilledLeavesNothing(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGTERM, syscall.SIGINT} {
		dir := t.TempDir()
		cmd := startChild(t, "unnamed", filepath.Join(dir, "out.cflow"))
		if n := entries(t, dir); len(n) != 0 {
			t.Fatalf("unnamed temp visible while writing: %v", n)
		}
		cmd.Process.Signal(sig)
		if !waitDeath(cmd) {
			t.Logf("%v is ignored in this environment; the child was killed instead", sig)
		}
		if n := entries(t, dir); len(n) != 0 {
			t.Errorf("%v left %v", sig, n)
		}
	}
}

// TestSinkStaleTempsRemoved: where temps must be named, the next sink for
// the same path removes those of killed writers and keeps a live one's.
func TestSinkStaleTempsRemoved(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.cflow")
	dead := startChild(t, "named", path)
	dead.Process.Signal(syscall.SIGKILL)
	dead.Wait()
	stale := entries(t, dir)
	if len(stale) != 1 {
		t.Fatalf("want the killed writer's temp, have %v", stale)
	}
	live := startChild(t, "named", path) // its CreateSink removes the stale one
	defer func() { live.Process.Kill(); live.Wait() }()
	if n := entries(t, dir); len(n) != 1 || n[0] == stale[0] {
		t.Fatalf("want only the live writer's temp, have %v (stale %v)", n, stale)
	}
	s, err := createSink(path, false)
	if err != nil {
		t.Fatal(err)
	}
	s.Write([]byte("x"))
	if n := entries(t, dir); len(n) != 2 {
		t.Fatalf("want the live writer's temp and ours, have %v", n)
	}
	if err := s.Commit(); err != nil {
		t.Fatal(err)
	}
	live.Process.Kill()
	live.Wait()
	if _, err := CreateSink(path); err != nil {
		t.Fatal(err)
	}
	if n := entries(t, dir); len(n) != 1 || n[0] != "out.cflow" {
		t.Fatalf("after the live writer died and a new sink opened: %v", n)
	}
}

// TestSinkCommitPlacesFile: both kinds of temp end as the target with the
// bytes written and no temp beside it; Abort leaves nothing.
func TestSinkCommitPlacesFile(t *testing.T) {
	for _, unnamed := range []bool{true, false} {
		dir := t.TempDir()
		path := filepath.Join(dir, "o")
		s, err := createSink(path, unnamed)
		if err != nil {
			t.Fatal(err)
		}
		s.Write([]byte("hello"))
		s.WriteAt([]byte("J"), 0)
		if err := s.Commit(); err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(path); string(b) != "Jello" {
			t.Fatalf("unnamed=%v: %q", unnamed, b)
		}
		if n := entries(t, dir); len(n) != 1 {
			t.Fatalf("unnamed=%v: %v", unnamed, n)
		}
		a, _ := createSink(filepath.Join(dir, "p"), unnamed)
		a.Write([]byte("x"))
		a.Abort()
		if n := entries(t, dir); len(n) != 1 {
			t.Fatalf("unnamed=%v after Abort: %v", unnamed, n)
		}
	}
}

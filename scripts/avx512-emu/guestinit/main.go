//go:build linux

// Command guestinit is the /init (pid 1) of scripts/avx512-emu.sh's
// initramfs. It mounts proc, sys, devtmpfs and a tmpfs /tmp, runs /test.bin
// with the arguments listed in /args (one per line), streams the program's
// stdout and stderr to the console (ttyS0), prints "EMU-EXIT <code>" and
// powers the machine off.
package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// guest is the emulated machine as init sees it: the console the host
// script reads (the first serial port).
type guest struct {
	console *os.File
}

func (g guest) logf(format string, a ...any) {
	fmt.Fprintf(g.console, format+"\n", a...)
}

// drain waits until the console's tty has pushed every queued byte out of
// the serial port (tcdrain), so powering off cannot cut the output short.
func (g guest) drain() {
	syscall.Syscall(syscall.SYS_IOCTL, g.console.Fd(), 0x5409 /* TCSBRK */, 1)
}

// poweroff reports the program's exit code on the console and ends the
// emulation.
func (g guest) poweroff(code int) {
	g.logf("EMU-EXIT %d", code)
	g.drain()
	syscall.Sync()
	time.Sleep(50 * time.Millisecond)
	g.drain()
	syscall.Reboot(syscall.LINUX_REBOOT_CMD_POWER_OFF)
	// If power-off failed, halt forever; the host script watches for EMU-EXIT.
	for {
		time.Sleep(time.Hour)
	}
}

func (g guest) mount(src, dst, fstype string, flags uintptr, data string) {
	os.MkdirAll(dst, 0o755)
	if err := syscall.Mount(src, dst, fstype, flags, data); err != nil && !errors.Is(err, syscall.EBUSY) {
		g.logf("EMU-WARN mount %s on %s: %v", fstype, dst, err)
	}
}

func main() {
	// Until /dev is mounted there may be no console; fall back to stdout.
	g := guest{console: os.Stdout}
	g.mount("devtmpfs", "/dev", "devtmpfs", 0, "")
	if f, err := os.OpenFile("/dev/console", os.O_WRONLY, 0); err == nil {
		g.console = f
	} else if f, err := os.OpenFile("/dev/ttyS0", os.O_WRONLY, 0); err == nil {
		g.console = f
	}
	// Keep kernel messages off the console from here on (console_loglevel=1).
	syscall.Syscall(syscall.SYS_SYSLOG, 8, 0, 1)
	g.mount("proc", "/proc", "proc", 0, "")
	g.mount("sysfs", "/sys", "sysfs", 0, "")
	g.mount("tmpfs", "/tmp", "tmpfs", 0, "mode=1777")
	g.mount("tmpfs", "/dev/shm", "tmpfs", 0, "mode=1777")

	var args []string
	if b, err := os.ReadFile("/args"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if l != "" || len(args) > 0 {
				args = append(args, l)
			}
		}
		// Drop the trailing empty line from the final newline.
		for len(args) > 0 && args[len(args)-1] == "" {
			args = args[:len(args)-1]
		}
	}
	workdir := "/work"
	if b, err := os.ReadFile("/workdir"); err == nil && strings.TrimSpace(string(b)) != "" {
		workdir = strings.TrimSpace(string(b))
	}
	os.MkdirAll(workdir, 0o755)

	env := []string{"PATH=/bin:/usr/bin", "HOME=/tmp", "TMPDIR=/tmp", "TERM=dumb"}
	if f, err := os.Open("/env"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if l := sc.Text(); strings.Contains(l, "=") {
				env = append(env, l)
			}
		}
		f.Close()
	}

	cmd := exec.Command("/test.bin", args...)
	cmd.Dir = workdir
	cmd.Env = env
	cmd.Stdout = g.console
	cmd.Stderr = g.console
	cmd.Stdin = nil
	start := time.Now()
	g.logf("EMU-BEGIN")
	err := cmd.Run()
	code := 0
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				g.logf("EMU-WARN killed by signal %v", ws.Signal())
				code = 128 + int(ws.Signal())
			}
		} else {
			g.logf("EMU-WARN exec: %v", err)
			code = 127
		}
	}
	g.logf("EMU-GUEST-SECONDS %.1f", time.Since(start).Seconds())
	g.poweroff(code)
}

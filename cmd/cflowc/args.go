package main

import (
	"fmt"
	"os"
	"runtime"
	"strings"

	"github.com/cflow-dev/cflow/internal/fileio"
	"github.com/schollz/progressbar/v3"
	"github.com/urfave/cli/v2"
	"golang.org/x/term"
)

// interspersed moves a subcommand's flags ahead of its positional arguments,
// so `cflowc run model.cflow --prompt-ids 1` works as users of llama.cpp
// expect; urfave/cli v2 stops parsing flags at the first positional. Flags
// that take a value carry the next token with them; "--" ends flag parsing.
func interspersed(args []string, cmds []*cli.Command) []string {
	if len(args) < 2 {
		return args
	}
	// Shell completion asks with this flag last; it must stay last.
	if n := len(args) - 1; args[n] == "--generate-bash-completion" {
		return append(interspersed(args[:n:n], cmds), args[n])
	}
	out := []string{args[0]}
	rest := args[1:]
	// Global flags (e.g. --version) and the command path.
	var cmd *cli.Command
	for len(rest) > 0 && cmd == nil {
		tok := rest[0]
		out = append(out, tok)
		rest = rest[1:]
		if !strings.HasPrefix(tok, "-") {
			cmd = findCommand(cmds, tok)
			if cmd == nil {
				return append(out, rest...)
			}
		}
	}
	for cmd != nil && isGroup(cmd) && len(rest) > 0 {
		sub := findCommand(cmd.Subcommands, rest[0])
		if sub == nil {
			// Not one of its subcommands: leave the line as it is, so the
			// group's action names the unknown word (moving a
			// subcommand's flags ahead would make the group reject them).
			return append(out, rest...)
		}
		out = append(out, rest[0])
		rest = rest[1:]
		cmd = sub
	}
	if cmd == nil {
		return out
	}
	flags, pos := splitFlags(cmd, rest)
	out = append(out, flags...)
	return append(out, pos...)
}

// splitFlags parts a command's arguments into its flags (each with its
// value) and the positional arguments, in their order; "--" ends the
// flags.
func splitFlags(cmd *cli.Command, rest []string) (flags, pos []string) {
	for i := 0; i < len(rest); i++ {
		tok := rest[i]
		if tok == "--" {
			pos = append(pos, rest[i:]...)
			break
		}
		if !strings.HasPrefix(tok, "-") || tok == "-" {
			pos = append(pos, tok)
			continue
		}
		flags = append(flags, tok)
		name := strings.TrimLeft(tok, "-")
		if strings.Contains(name, "=") {
			continue
		}
		if f := findFlag(cmd.Flags, name); f != nil && takesValue(f) && i+1 < len(rest) {
			i++
			flags = append(flags, rest[i])
		}
	}
	return flags, pos
}

// isGroup reports whether c only groups subcommands (dev, export); the
// "help" subcommand urfave/cli adds to any command it has run does not
// count.
func isGroup(c *cli.Command) bool {
	for _, s := range c.Subcommands {
		if s.Name != "help" {
			return true
		}
	}
	return false
}

func findCommand(cmds []*cli.Command, name string) *cli.Command {
	for _, c := range cmds {
		if c.Name == name {
			return c
		}
		for _, a := range c.Aliases {
			if a == name {
				return c
			}
		}
	}
	return nil
}

func findFlag(flags []cli.Flag, name string) cli.Flag {
	for _, f := range flags {
		for _, n := range f.Names() {
			if n == name {
				return f
			}
		}
	}
	return nil
}

func takesValue(f cli.Flag) bool {
	if df, ok := f.(cli.DocGenerationFlag); ok {
		return df.TakesValue()
	}
	return true
}

// readArgFile reads a file named by a flag (--text), bounded by
// fileio.MaxArgFileBytes so /dev/zero is an error, not a memory leak.
func readArgFile(path string) ([]byte, error) {
	return fileio.ReadFileLimit(path, fileio.MaxArgFileBytes)
}

// maxThreads bounds --threads: four workers per CPU (at least 16). More
// only oversubscribes the cores, and each worker owns buffers and an OS
// thread, so 100000 would exhaust memory before decoding a token.
func maxThreads() int { return max(16, 4*runtime.NumCPU()) }

// checkThreads is every command's --threads rule, with its own message.
func checkThreads(cmd string, n int) error {
	if n < 1 || n > maxThreads() {
		return cli.Exit(fmt.Sprintf("%s: --threads %d outside 1..%d (4 per CPU)", cmd, n, maxThreads()), exitUsage)
	}
	return nil
}

// onOneCPU runs a 1-thread command with GOMAXPROCS 1 and returns the
// function that restores the setting before. With an idle second P, each
// preemption of the engine goroutine (the scheduler's 10 ms slices) wakes
// an OS thread for that P, a futex call, and the goroutine may resume on
// the other CPU with cold caches: a 1-thread decode token measured 2–3%
// faster on one P (docs/PERFORMANCE.md, log at 0382674, "Session 9: a 1-thread command on
// one P"). Other counts keep every P: a multi-thread engine's waiting
// callers poll beside its workers.
func onOneCPU(threads int) (restore func()) {
	if threads != 1 {
		return func() {}
	}
	prev := runtime.GOMAXPROCS(1)
	return func() { runtime.GOMAXPROCS(prev) }
}

// checkOutput refuses an output path that is an input or a directory
// (fileio.CheckOutput) before the command does any work.
func checkOutput(cmd, flag, out string, inputs ...string) error {
	if err := fileio.CheckOutput(out, inputs...); err != nil {
		return cli.Exit(fmt.Sprintf("%s: %s: %v", cmd, flag, err), exitUsage)
	}
	return nil
}

// progressBar returns a progress callback drawing the converter's bar
// (schollz/progressbar, bytes or steps, rate and ETA) on stderr when stderr
// is a terminal, and nil otherwise (pipes and CI logs stay clean). The bar
// is created on the first call, when the total is known, and cleared when
// done reaches it.
func progressBar(desc string, bytes bool) func(done, total int64) {
	if !term.IsTerminal(int(os.Stderr.Fd())) {
		return nil
	}
	var bar *progressbar.ProgressBar
	return func(done, total int64) {
		if bar == nil {
			bar = progressbar.NewOptions64(total,
				progressbar.OptionSetWriter(os.Stderr),
				progressbar.OptionShowBytes(bytes),
				progressbar.OptionSetDescription(desc),
				progressbar.OptionThrottle(100_000_000),
				progressbar.OptionShowCount(),
				progressbar.OptionSetPredictTime(true),
				progressbar.OptionClearOnFinish(),
			)
		}
		bar.Set64(done)
		if done >= total {
			bar.Finish()
		}
	}
}

// dropOutputCache evicts a model file convert or export just committed
// (written, fsynced, renamed) from the page cache. The pages the writer
// left there are small folios, which a mapping can only map with 4 KiB
// pages (on the Zen 3 VM decode from 4 KiB folios ran at 1/1.12 of its
// 2 MiB-folio speed at one thread, 1/1.22 at two); dropped, the first
// engine to map the file reads it back in 2 MiB folios. A hint: a failure
// only leaves the small folios, so it is not reported.
func dropOutputCache(path string) { _ = fileio.DropPageCache(path) }

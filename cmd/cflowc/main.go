// Command cflowc converts, inspects, verifies and runs cflow models. Each
// subcommand lives in its own file and registers itself in commands, so the
// CLI stays a thin layer over the packages.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/cflow-dev/cflow/cflowfmt"
	"github.com/cflow-dev/cflow/engine"
	"github.com/cflow-dev/cflow/internal/fileio"
	"github.com/cflow-dev/cflow/verify"
)

// Exit codes: 0 success, 1 a failed check (verify parity, inspect --check),
// 2 bad usage or bad input, 3 an internal error.
const (
	exitFail  = 1
	exitUsage = 2
	exitError = 3
)

// lateExit is the exit error for a failure found after a command started
// its work (decode, replay, export): bad input found late — a corrupt
// expert tile parsed lazily, a sequence past the context, a model that does
// not match — is still bad input (exit 2, naming it); anything else is a
// bug of ours (exit 3).
func lateExit(cmd string, err error) error {
	if badFile(err) || isOutputError(err) || errors.Is(err, engine.ErrContextFull) || errors.Is(err, verify.ErrMismatch) {
		return cli.Exit(cmd+": "+err.Error(), exitUsage)
	}
	return cli.Exit(cmd+": "+err.Error(), exitError)
}

// badFile reports whether err says an input file is malformed: a format
// error at an offset, or a mapped file truncated under the command (a read
// of a vanished page).
func badFile(err error) bool {
	var fe *cflowfmt.FormatError
	var fault *fileio.FaultError
	return errors.As(err, &fe) || errors.As(err, &fault)
}

// isOutputError reports whether err is the output's: a path that is not a
// regular file, a missing directory, a full disk. That is the user's path
// or disk (exit 2), never a bug of ours.
func isOutputError(err error) bool {
	var oe *fileio.OutputError
	return errors.As(err, &oe)
}

// commands is filled by each command file's init.
var commands []*cli.Command

// version is set with -ldflags "-X main.version=…" by make build.
var version = "dev"

func main() {
	os.Exit(runMain(os.Args, os.Stderr))
}

// runMain runs the CLI on args and returns the exit code; tests call it
// to see exactly what a user sees.
func runMain(args []string, stderr io.Writer) int {
	app := newApp()
	app.ErrWriter = stderr
	if err := app.Run(interspersed(args, app.Commands)); err != nil {
		fmt.Fprintln(stderr, "cflowc:", withVerb(commandPath(args, app.Commands), err.Error()))
		var ec cli.ExitCoder
		if errors.As(err, &ec) {
			return ec.ExitCode()
		}
		return exitUsage
	}
	return 0
}

// newApp assembles the CLI: every command, an unknown command or flag
// reported in one line with a hint (exit 2) instead of a help page, and
// shell completion (cflowc completion).
func newApp() *cli.App {
	sort.Slice(commands, func(i, j int) bool { return commands[i].Name < commands[j].Name })
	app := &cli.App{
		Name:                 "cflowc",
		Usage:                "bandwidth-efficient transformer decode on CPUs: convert, inspect, verify, run",
		Version:              versionString(),
		Commands:             commands,
		EnableBashCompletion: true,
		ExitErrHandler:       func(*cli.Context, error) {},
		OnUsageError:         usageError,
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return cli.Exit(fmt.Sprintf("unknown command %q (commands: %s; see 'cflowc --help')", c.Args().First(), commandNames(commands)), exitUsage)
			}
			return cli.ShowAppHelp(c)
		},
	}
	var wire func(parent string, cs []*cli.Command)
	wire = func(parent string, cs []*cli.Command) {
		for _, c := range cs {
			if c.OnUsageError == nil {
				c.OnUsageError = usageError
			}
			if isGroup(c) && c.Action == nil {
				c.Action = unknownSubcommand(strings.TrimSpace(parent + " " + c.Name))
			}
			wire(parent+" "+c.Name, c.Subcommands)
		}
	}
	wire("", app.Commands)
	return app
}

// unknownSubcommand is the action of a command that only groups others
// (dev, export): its help without arguments, else an unknown-command error
// naming the known ones (exit 2). urfave/cli's default answered "No help
// topic for 'x'" with exit 3.
func unknownSubcommand(path string) cli.ActionFunc {
	return func(c *cli.Context) error {
		if c.NArg() == 0 {
			return cli.ShowSubcommandHelp(c)
		}
		return cli.Exit(fmt.Sprintf("%s: unknown command %q (commands: %s; see 'cflowc %s --help')",
			path, c.Args().First(), commandNames(c.Command.Subcommands), path), exitUsage)
	}
}

// usageError prints a flag error in one line with a hint, not the whole
// help page with the error last.
func usageError(c *cli.Context, err error, _ bool) error {
	var path []string
	for _, x := range c.Lineage() {
		if x.Command == nil || x.Command.Name == "" || x.Command.Name == "cflowc" {
			continue
		}
		if len(path) == 0 || path[0] != x.Command.Name {
			path = append([]string{x.Command.Name}, path...)
		}
	}
	cmd := strings.Join(path, " ")
	if cmd == "" {
		return cli.Exit(fmt.Sprintf("%v (see 'cflowc --help')", err), exitUsage)
	}
	return cli.Exit(fmt.Sprintf("%s: %v (see 'cflowc %s --help')", cmd, err, cmd), exitUsage)
}

// commandPath is the command a command line names ("export gguf"), "" for
// none.
func commandPath(args []string, cmds []*cli.Command) string {
	var path []string
	for _, a := range args[min(1, len(args)):] {
		if strings.HasPrefix(a, "-") {
			if len(path) == 0 {
				continue
			}
			break
		}
		c := findCommand(cmds, a)
		if c == nil {
			break
		}
		path = append(path, c.Name)
		cmds = c.Subcommands
	}
	return strings.Join(path, " ")
}

// withVerb makes every error line start with the command that failed, as
// "run: …", whichever package produced the message; a message that already
// names the command (or its first word) is left as it is.
func withVerb(verb, msg string) string {
	if verb == "" {
		return msg
	}
	first, _, _ := strings.Cut(verb, " ")
	if strings.HasPrefix(msg, verb+":") || strings.HasPrefix(msg, first+":") || strings.HasPrefix(msg, first+" ") {
		return msg
	}
	return verb + ": " + msg
}

func commandNames(cs []*cli.Command) string {
	var n []string
	for _, c := range cs {
		if !c.Hidden && c.Name != "help" { // urfave/cli's own, added to every group
			n = append(n, c.Name)
		}
	}
	return strings.Join(n, ", ")
}

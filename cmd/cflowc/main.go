// Command cflowc converts, inspects, verifies and runs cflow models. Each
// subcommand lives in its own file and registers itself in commands, so the
// CLI stays a thin layer over the packages.
package main

import (
	"errors"
	"fmt"
	"os"
	"sort"

	"github.com/urfave/cli/v2"
)

// Exit codes: 0 success, 1 a failed check (verify parity, inspect --check),
// 2 bad usage or bad input, 3 an internal error.
const (
	exitFail  = 1
	exitUsage = 2
	exitError = 3
)

// commands is filled by each command file's init.
var commands []*cli.Command

// version is set with -ldflags "-X main.version=…" by make build.
var version = "dev"

func main() {
	sort.Slice(commands, func(i, j int) bool { return commands[i].Name < commands[j].Name })
	app := &cli.App{
		Name:           "cflowc",
		Usage:          "bandwidth-efficient transformer decode on CPUs: convert, inspect, verify, run",
		Version:        versionString(),
		Commands:       commands,
		ExitErrHandler: func(*cli.Context, error) {},
	}
	if err := app.Run(interspersed(os.Args, commands)); err != nil {
		fmt.Fprintln(os.Stderr, "cflowc:", err)
		var ec cli.ExitCoder
		if errors.As(err, &ec) {
			os.Exit(ec.ExitCode())
		}
		os.Exit(exitUsage)
	}
}

package main

import (
	"strings"

	"github.com/urfave/cli/v2"
)

// interspersed moves a subcommand's flags ahead of its positional arguments,
// so `cflowc run model.cflow --prompt-ids 1` works as users of llama.cpp
// expect; urfave/cli v2 stops parsing flags at the first positional. Flags
// that take a value carry the next token with them; "--" ends flag parsing.
func interspersed(args []string, cmds []*cli.Command) []string {
	if len(args) < 2 {
		return args
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
	for cmd != nil && len(cmd.Subcommands) > 0 && len(rest) > 0 {
		sub := findCommand(cmd.Subcommands, rest[0])
		if sub == nil {
			break
		}
		out = append(out, rest[0])
		rest = rest[1:]
		cmd = sub
	}
	if cmd == nil {
		return out
	}
	var flags, pos []string
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
	out = append(out, flags...)
	return append(out, pos...)
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

package main

import (
	"fmt"

	"github.com/urfave/cli/v2"
)

// man and completion: what users expect of an installed CLI. Both are
// generated from the same command table as --help, so they cannot drift.
func init() {
	commands = append(commands, &cli.Command{
		Name:  "man",
		Usage: "print the cflowc(1) man page (roff): cflowc man > /usr/local/share/man/man1/cflowc.1",
		Action: func(c *cli.Context) error {
			if c.NArg() != 0 {
				return cli.Exit("man: takes no arguments", exitUsage)
			}
			page, err := c.App.ToManWithSection(1)
			if err != nil {
				return cli.Exit("man: "+err.Error(), exitError)
			}
			_, err = fmt.Fprint(c.App.Writer, page)
			return err
		},
	}, &cli.Command{
		Name:      "completion",
		Usage:     "print a shell completion script: source <(cflowc completion bash), or zsh",
		ArgsUsage: "bash|zsh",
		Action: func(c *cli.Context) error {
			script, ok := completionScripts[c.Args().First()]
			if c.NArg() != 1 || !ok {
				return cli.Exit("completion: give one shell, bash or zsh", exitUsage)
			}
			_, err := fmt.Fprint(c.App.Writer, script)
			return err
		},
	})
}

// completionScripts ask cflowc itself for candidates through urfave/cli's
// --generate-bash-completion (adapted from urfave/cli v2's autocomplete/
// scripts, MIT licence), falling back to file names.
var completionScripts = map[string]string{
	"bash": `# cflowc bash completion: source <(cflowc completion bash)
_cflowc_complete() {
  local cur="${COMP_WORDS[COMP_CWORD]}" req
  local words=("${COMP_WORDS[@]:0:$COMP_CWORD}")
  if [[ "$cur" == -* ]]; then
    req=("${words[@]}" "$cur" --generate-bash-completion)
  else
    req=("${words[@]}" --generate-bash-completion)
  fi
  local opts
  opts=$("${req[@]}" 2>/dev/null)
  COMPREPLY=($(compgen -W "$opts" -- "$cur"))
}
complete -o bashdefault -o default -F _cflowc_complete cflowc
`,
	"zsh": `#compdef cflowc
# cflowc zsh completion: source <(cflowc completion zsh)
_cflowc() {
  local -a opts
  local cur=${words[-1]}
  if [[ "$cur" == -* ]]; then
    opts=("${(@f)$(${words[@]:0:#words[@]-1} ${cur} --generate-bash-completion 2>/dev/null)}")
  else
    opts=("${(@f)$(${words[@]:0:#words[@]-1} --generate-bash-completion 2>/dev/null)}")
  fi
  if [[ "${opts[1]}" != "" ]]; then
    _describe 'values' opts
  else
    _files
  fi
}
compdef _cflowc cflowc
`,
}

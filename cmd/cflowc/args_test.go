package main

import (
	"reflect"
	"runtime"
	"testing"

	"github.com/urfave/cli/v2"
)

func TestInterspersedMovesFlagsBeforePositionals(t *testing.T) {
	cmds := []*cli.Command{
		{Name: "run", Flags: []cli.Flag{&cli.StringFlag{Name: "prompt-ids"}, &cli.BoolFlag{Name: "json"}}},
		{Name: "export", Subcommands: []*cli.Command{{Name: "gguf", Flags: []cli.Flag{&cli.StringFlag{Name: "o", Aliases: []string{"output"}}}}}},
	}
	cases := []struct{ in, want []string }{
		{[]string{"cflowc", "run", "m.cflow", "--prompt-ids", "1,2", "--json"},
			[]string{"cflowc", "run", "--prompt-ids", "1,2", "--json", "m.cflow"}},
		{[]string{"cflowc", "run", "--json", "m.cflow", "--prompt-ids=3"},
			[]string{"cflowc", "run", "--json", "--prompt-ids=3", "m.cflow"}},
		{[]string{"cflowc", "export", "gguf", "m.cflow", "-o", "x.gguf"},
			[]string{"cflowc", "export", "gguf", "-o", "x.gguf", "m.cflow"}},
		{[]string{"cflowc", "run", "m.cflow", "--", "--json"},
			[]string{"cflowc", "run", "m.cflow", "--", "--json"}},
		{[]string{"cflowc", "--version"}, []string{"cflowc", "--version"}},
	}
	for _, c := range cases {
		if got := interspersed(c.in, cmds); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%q → %q, want %q", c.in, got, c.want)
		}
	}
}

// TestOnOneCPU: a 1-thread command runs on one P and gives the setting
// back; other thread counts leave it alone.
func TestOnOneCPU(t *testing.T) {
	before := runtime.GOMAXPROCS(0)
	restore := onOneCPU(1)
	if got := runtime.GOMAXPROCS(0); got != 1 {
		t.Errorf("GOMAXPROCS %d under a 1-thread command, want 1", got)
	}
	restore()
	if got := runtime.GOMAXPROCS(0); got != before {
		t.Fatalf("GOMAXPROCS %d after, want %d back", got, before)
	}
	restore = onOneCPU(2)
	if got := runtime.GOMAXPROCS(0); got != before {
		t.Errorf("GOMAXPROCS %d under a 2-thread command, want %d", got, before)
	}
	restore()
}

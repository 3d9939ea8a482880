package main

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/cflow-dev/cflow/ppl"
	"github.com/urfave/cli/v2"
)

func init() {
	commands = append(commands, &cli.Command{
		Name:      "tokenize",
		Usage:     "token ids of a text file under the model's tokenizer (no BOS added)",
		ArgsUsage: "FILE --text TEXT.txt [--json]",
		Description: "Prints the ids space-separated, or with --json {\"ids\": [...], \"bos\": N} (bos −1 when the\n" +
			"tokenizer has none). This is the tokenization cflowc ppl scores.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "text", Usage: "text file to tokenize (required)"},
			&cli.BoolFlag{Name: "json", Usage: "print {\"ids\": [...], \"bos\": N}"},
		},
		Action: runTokenize,
	})
}

func runTokenize(c *cli.Context) error {
	if c.NArg() != 1 {
		return cli.Exit("tokenize: give one model FILE", exitUsage)
	}
	if c.String("text") == "" {
		return cli.Exit("tokenize: --text is required", exitUsage)
	}
	text, err := readArgFile(c.String("text"))
	if err != nil {
		return cli.Exit("tokenize: "+err.Error(), exitUsage)
	}
	m, err := openRunModel(c.Args().First())
	if err != nil {
		return cli.Exit("tokenize: "+err.Error(), exitUsage)
	}
	defer m.Close()
	ids, bos, err := ppl.Tokenize(m, text)
	if err != nil {
		return cli.Exit("tokenize: "+err.Error(), exitUsage)
	}
	if ids == nil {
		ids = []int{}
	}
	if c.Bool("json") {
		out, err := json.Marshal(struct {
			IDs []int `json:"ids"`
			BOS int   `json:"bos"`
		}{ids, bos})
		if err != nil {
			return cli.Exit(err.Error(), exitError)
		}
		fmt.Println(string(out))
		return nil
	}
	var b strings.Builder
	for i, id := range ids {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprint(&b, id)
	}
	fmt.Println(b.String())
	return nil
}

package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/urfave/cli/v2"

	"github.com/cflow-dev/cflow/cflowfmt"
	"github.com/cflow-dev/cflow/cflowfmt/tokmeta"
	"github.com/cflow-dev/cflow/internal/fileio"
	"github.com/cflow-dev/cflow/tokenizer"
	"github.com/cflow-dev/cflow/vflowfmt"
)

// inspect is gguf-dump for .cflow and .vflow: the logic lives in the
// format packages' Describe functions; this file only picks the format by
// magic and prints.
func init() {
	commands = append(commands, &cli.Command{
		Name:      "inspect",
		Usage:     "print a .cflow or .vflow file's header, metadata, tables, byte accounting and tiles",
		ArgsUsage: "FILE",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "json", Usage: "print one JSON object (geometry under \"header\")"},
			&cli.BoolFlag{Name: "tiles", Usage: "list every tile header"},
			&cli.BoolFlag{Name: "check", Usage: "read every tile and validate every header and bound; exit 1 on the first problem"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return cli.Exit("inspect: want exactly one FILE", exitUsage)
			}
			return runInspect(c.App.Writer, c.Args().First(), c.Bool("json"), c.Bool("tiles"), c.Bool("check"))
		},
	})
}

// inspected is what both formats offer inspect.
type inspected struct {
	desc  any // *cflowfmt.Description or *vflowfmt.Description
	text  func(io.Writer)
	walk  func(func(cflowfmt.Loc, *cflowfmt.MappedTile) error) error
	check func() error
	close func() error
	model *cflowfmt.Model
}

// checkAll is inspect --check: the format's tile walk (coverage, padding,
// finite values, checksums) and then what run loads next from the same
// bytes, the tokenizer, so check never passes a file run refuses.
func (in *inspected) checkAll() error {
	if err := in.check(); err != nil {
		return err
	}
	m := in.model
	if _, err := tokmeta.Load(m.Meta, int(m.Header.VocabSize)); err != nil && !errors.Is(err, tokenizer.ErrNoTokenizer) {
		return &cflowfmt.FormatError{File: m.Path, Offset: int64(m.Header.MetadataOffset), What: "metadata tokenizer: " + err.Error()}
	}
	return nil
}

func openInspected(path string) (*inspected, error) {
	kind, err := vflowfmt.Sniff(path)
	if err != nil {
		return nil, err
	}
	if kind == vflowfmt.KindCflow {
		f, err := cflowfmt.Open(path)
		if err != nil {
			return nil, err
		}
		var d *cflowfmt.Description
		err = fileio.GuardFault(path, func() (err error) { d, err = f.Describe(); return err })
		if err != nil {
			f.Close()
			return nil, err
		}
		return &inspected{d, d.WriteText, f.Walk, f.Check, f.Close, f.Model}, nil
	}
	f, err := vflowfmt.Open(path)
	if err != nil {
		return nil, err
	}
	var d *vflowfmt.Description
	err = fileio.GuardFault(path, func() (err error) { d, err = f.Describe(); return err })
	if err != nil {
		f.Close()
		return nil, err
	}
	return &inspected{d, d.WriteText, f.Walk, f.Check, f.Close, f.Model}, nil
}

// runInspect exits 2 when the file cannot be read (or, without --check,
// parsed) and 1 when --check finds a malformed byte anywhere, including a
// structure Open already refuses.
func runInspect(w io.Writer, path string, asJSON, tiles, check bool) error {
	in, err := openInspected(path)
	if err != nil {
		if check && badFile(err) {
			return cli.Exit(fmt.Sprintf("inspect --check: %v", err), exitFail)
		}
		return cli.Exit(fmt.Sprintf("inspect: %v", err), exitUsage)
	}
	defer in.close()
	var list []cflowfmt.TileInfo
	if tiles {
		if err = fileio.GuardFault(path, func() (err error) { list, err = cflowfmt.ListTiles(in.walk); return err }); err != nil {
			return cli.Exit(fmt.Sprintf("inspect: %v", err), exitUsage)
		}
	}
	var checkErr error
	if check {
		checkErr = in.checkAll()
	}
	_, hasSums := cflowfmt.StoredSums(in.model.Meta)
	if asJSON {
		if err := in.printJSON(w, list, tiles, check, hasSums, checkErr); err != nil {
			return err
		}
	} else {
		in.printText(w, list, tiles, check, hasSums, checkErr)
	}
	if checkErr != nil {
		if !badFile(checkErr) {
			return cli.Exit(fmt.Sprintf("inspect: %v", checkErr), exitUsage)
		}
		return cli.Exit(fmt.Sprintf("inspect --check: %v", checkErr), exitFail)
	}
	return nil
}

// printJSON prints the description flattened into one object, with the
// tile list and the check's outcome when asked for.
func (in *inspected) printJSON(w io.Writer, list []cflowfmt.TileInfo, tiles, check, hasSums bool, checkErr error) error {
	b, err := json.Marshal(in.desc)
	if err != nil {
		return cli.Exit(fmt.Sprintf("inspect: %v", err), exitError)
	}
	var out map[string]any
	json.Unmarshal(b, &out)
	if tiles {
		out["tile_list"] = list
	}
	if check {
		out["check"] = "ok"
		out["checksums"] = map[bool]string{true: "verified", false: "none"}[hasSums]
		if checkErr != nil {
			out["check"] = checkErr.Error()
		}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// printText prints the description, the tile list and a passed check.
func (in *inspected) printText(w io.Writer, list []cflowfmt.TileInfo, tiles, check, hasSums bool, checkErr error) {
	in.text(w)
	if tiles {
		fmt.Fprintln(w, "\ntile list: offset layer matrix expert row_off col_off rows cols quant_group bytes")
		for _, t := range list {
			fmt.Fprintf(w, "  %d %d %s %d %d %d %d %d %d %d\n", t.Offset, t.Layer, t.Matrix, t.Expert, t.RowOffset, t.ColOffset, t.Rows, t.Cols, t.QuantGroup, t.Bytes)
		}
	}
	if check && checkErr == nil {
		sums := "per-layer weight checksums verified"
		if !hasSums {
			sums = "no checksums: the file predates them, weight bytes not verified"
		}
		fmt.Fprintf(w, "\ncheck: ok (every tile read and validated; %s)\n", sums)
	}
}

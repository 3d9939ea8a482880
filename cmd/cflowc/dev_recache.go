package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/cflow-dev/cflow/internal/fileio"
)

// recacheCommand is `cflowc dev recache`: the page cache keeps a file the
// converter wrote (or read() read) in small folios, which no mapping can
// put on 2 MiB pages, and decode then pays a TLB miss per 4 KiB. The logic
// is fileio.Recache; this parses flags and prints.
func recacheCommand() *cli.Command {
	return &cli.Command{
		Name:      "recache",
		Usage:     "re-read model files into the page cache in 2 MiB folios (so decode maps them with 2 MiB pages)",
		ArgsUsage: "FILE...",
		Description: "For each FILE: maps it and faults it in to measure how much of the mapping the page cache lets the\n" +
			"kernel put on 2 MiB pages (before), drops the file's clean cached pages (posix_fadvise DONTNEED),\n" +
			"and faults it back in through a MADV_HUGEPAGE mapping (after). The file's bytes are never written;\n" +
			"pages other processes have mapped stay cached as they are. cflowc bench warns when a model mapping\n" +
			"is less than 90% on 2 MiB pages. Needs Linux with transparent huge pages not \"never\".",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "json", Usage: "print a JSON array, one object per FILE"},
		},
		Action: runRecache,
	}
}

// recacheJSON is one FILE's line of --json.
type recacheJSON struct {
	File           string  `json:"file"`
	Bytes          int64   `json:"bytes"`
	HugeBefore     int64   `json:"huge_page_bytes_before"`
	HugeAfter      int64   `json:"huge_page_bytes_after"`
	FractionBefore float64 `json:"huge_page_fraction_before"`
	FractionAfter  float64 `json:"huge_page_fraction_after"`
}

func runRecache(c *cli.Context) error {
	if c.NArg() == 0 {
		return cli.Exit("dev recache: give one or more FILEs", exitUsage)
	}
	files := c.Args().Slice()
	// Every FILE is checked before any is touched: a typo in the last
	// one should not leave the first ones half done.
	// Stat before open: opening a FIFO for reading would block.
	for _, p := range files {
		st, err := os.Stat(p)
		if err != nil {
			return cli.Exit("dev recache: "+err.Error(), exitUsage)
		}
		if !st.Mode().IsRegular() {
			return cli.Exit(fmt.Sprintf("dev recache: %s is not a regular file", p), exitUsage)
		}
		f, err := os.Open(p)
		if err != nil {
			return cli.Exit("dev recache: "+err.Error(), exitUsage)
		}
		f.Close()
	}
	if m := fileio.THPEnabled(); m == "never" || m == "" {
		fmt.Fprintf(os.Stderr, "note: transparent huge pages are %q here: no mapping gets 2 MiB pages, recache or not\n", m)
	}
	var out []recacheJSON
	for _, p := range files {
		r, err := fileio.Recache(p, progressBar("recaching "+p, true))
		if err != nil {
			if badFile(err) { // truncated under us
				return cli.Exit("dev recache: "+err.Error(), exitUsage)
			}
			return cli.Exit("dev recache: "+err.Error(), exitError)
		}
		out = append(out, recacheJSON{File: p, Bytes: r.After.Size, HugeBefore: r.Before.Huge, HugeAfter: r.After.Huge,
			FractionBefore: r.Before.Fraction(), FractionAfter: r.After.Fraction()})
		if !c.Bool("json") {
			fmt.Printf("%s: 2 MiB pages %s of the mapping before, %s after\n", p, r.Before, r.After)
		}
	}
	if c.Bool("json") {
		return json.NewEncoder(os.Stdout).Encode(out)
	}
	return nil
}

package verify

import (
	"encoding/json"
	"fmt"
	"io"
)

// WriteTable prints the per-step table and the one-line verdict.
func (r *Report) WriteTable(w io.Writer) error {
	fmt.Fprintf(w, "%5s %5s %7s %10s %10s %13s %7s  %s\n", "step", "pos", "token", "norm_err", "logit_err", "argmax", "top32", "")
	for _, s := range r.Steps {
		mark := "ok"
		switch {
		case !s.ArgmaxUsed:
			mark = "~" // reference top-2 gap below the rule's
		case !s.ArgmaxOK:
			mark = "≠"
		}
		status := "ok"
		if !s.OK {
			status = "FAIL " + s.Why
		}
		fmt.Fprintf(w, "%5d %5d %7d %10.3g %10.3g %6d/%-6d%s %4d/32  %s\n", s.Step, s.Position, s.Token, s.NormErr, s.LogitErr,
			s.Argmax, s.RefArgmax, mark, s.Overlap, status)
	}
	_, err := fmt.Fprintln(w, r.Verdict)
	return err
}

// WriteJSON writes the report as JSON for CI and scripts.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", " ")
	return enc.Encode(r)
}

package cflowfmt_test

import (
	"flag"
	"os"
	"testing"
)

// TestMain caps the fuzzer's input minimization (default 60 s per new
// input) unless the caller set -test.fuzzminimizetime: the seeds are real
// files of a few KB, and CI's 10-second runs (scripts/fuzz-short.sh) would
// otherwise spend their whole budget minimizing the first new input.
func TestMain(m *testing.M) {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.fuzzminimizetime" })
	if !set {
		flag.Set("test.fuzzminimizetime", "200x")
	}
	os.Exit(m.Run())
}

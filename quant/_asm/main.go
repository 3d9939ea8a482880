// Command _asm generates quant's amd64 kernels and their Go stubs with avo
// (github.com/mmcloughlin/avo), one arithmetic family per run:
//
//	go run . -family avx2i8 -out ../avx2i8_amd64.s -stubs ../avx2i8_amd64.go
//
// quant's gen.go holds the //go:generate lines; `go generate ./quant`
// rewrites every generated file and `make vet` fails when that changes
// one. A family is one Go function whose kernels are parameter sets
// (columns, codec, pair streams), so a new codec or column count is a new
// call, not a new copy of the assembly. The directory's leading underscore
// keeps it out of the main module's ./... patterns; its go.mod keeps avo
// out of the main module's dependencies.
package main

import (
	"flag"
	"fmt"
	"github.com/mmcloughlin/avo/build"
	"os"
)

func main() {
	// Its own flag set: importing avo's build package registers -out,
	// -stubs and -pkg on flag.CommandLine for avo's global Generate.
	fs := flag.NewFlagSet("_asm", flag.ExitOnError)
	family := fs.String("family", "", "kernel family to generate: "+familyNames())
	out := fs.String("out", "", "assembly output file")
	stubs := fs.String("stubs", "", "Go stub output file")
	pkg := fs.String("pkg", "quant", "package of the stub file")
	fs.Parse(os.Args[1:])
	add, ok := families[*family]
	if !ok || *out == "" || *stubs == "" || fs.NArg() != 0 {
		fmt.Fprintf(os.Stderr, "usage: go run . -family F -out FILE.s -stubs FILE.go (families: %s)\n", familyNames())
		os.Exit(2)
	}
	g := newGen()
	add(g)
	if err := g.write(*out, *stubs, *pkg); err != nil {
		if list, ok := err.(build.ErrorList); ok {
			for _, e := range list {
				fmt.Fprintln(os.Stderr, "_asm:", e)
			}
		} else {
			fmt.Fprintln(os.Stderr, "_asm:", err)
		}
		os.Exit(1)
	}
}

// families maps -family to the function that adds its kernels.
var families = map[string]func(*gen){
	"avx2i8": avx2i8Family,
	"float":  floatFamily,
	"exp":    expFamily,
	"encode": encodeFamily,
	"vnni":   vnniFamily,
}

func familyNames() string {
	s := ""
	for _, n := range []string{"avx2i8", "float", "exp", "encode", "vnni"} {
		if s != "" {
			s += ", "
		}
		s += n
	}
	return s
}

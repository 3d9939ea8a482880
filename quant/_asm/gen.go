package main

import (
	"bytes"
	"fmt"
	"go/token"
	"go/types"
	"os"

	"github.com/mmcloughlin/avo/attr"
	"github.com/mmcloughlin/avo/build"
	"github.com/mmcloughlin/avo/gotypes"
	"github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/pass"
	"github.com/mmcloughlin/avo/printer"
	"github.com/mmcloughlin/avo/reg"
)

// gen is one generated file: avo's build context (every instruction is a
// method of it) and the stand-in for package quant's types that kernel
// signatures name.
type gen struct {
	*build.Context
	pkg *types.Package
}

// quantPath is the package the stubs belong to.
const quantPath = "github.com/cflow-dev/cflow/quant"

// newGen starts a file built for !noasm. The signatures are resolved
// against a hand-made types.Package holding quant's vnniCol and vnniCol8
// rather than the real package (avo's Package loads it with go/packages),
// so the generator still runs while quant does not compile, e.g. with its
// generated stubs deleted.
func newGen() *gen {
	pkg := types.NewPackage(quantPath, "quant")
	ptr := func(b types.BasicKind) types.Type { return types.NewPointer(types.Typ[b]) }
	field := func(name string, t types.Type) *types.Var { return types.NewField(token.NoPos, pkg, name, t, false) }
	col := types.NewStruct([]*types.Var{
		field("xl", ptr(types.Int8)), field("xh", ptr(types.Int8)), field("c4", ptr(types.Int32)),
		field("dx", ptr(types.Float32)), field("y", ptr(types.Float32)),
	}, nil)
	col8 := types.NewStruct([]*types.Var{
		field("x8", ptr(types.Int8)), field("c8", ptr(types.Int32)),
		field("dx", ptr(types.Float32)), field("y", ptr(types.Float32)),
	}, nil)
	for n, st := range map[string]*types.Struct{"vnniCol": col, "vnniCol8": col8} {
		name := types.NewTypeName(token.NoPos, pkg, n, nil)
		types.NewNamed(name, st, nil)
		pkg.Scope().Insert(name)
	}
	g := &gen{Context: build.NewContext(), pkg: pkg}
	g.ConstraintExpr("!noasm")
	return g
}

// text starts function name: its TEXT attributes, local frame bytes, Go
// signature and the stub's doc comment. Every kernel's stub is
// //go:noescape: none keeps a pointer.
func (g *gen) text(name string, a attr.Attribute, frame int, sig string, doc ...string) {
	g.Function(name)
	g.Attributes(a)
	s, err := gotypes.ParseSignatureInPackage(g.pkg, sig)
	if err != nil {
		panic(fmt.Sprintf("%s: signature %q: %v", name, sig, err))
	}
	g.Signature(s)
	g.Doc(doc...)
	g.Pragma("noescape")
	if frame > 0 {
		g.AllocLocal(frame)
	}
}

// arg loads argument name into r (MOVQ name+off(FP), r).
func (g *gen) arg(name string, r reg.Register) { g.Load(g.Param(name), r) }

// param is argument name's frame slot (name+off(FP)), for instructions
// that read it in place.
func (g *gen) param(name string) operand.Mem {
	b, err := g.Param(name).Resolve()
	if err != nil {
		panic(err)
	}
	return b.Addr
}

// result is the function's one result's frame slot (ret+off(FP)).
func (g *gen) result() operand.Mem {
	b, err := g.ReturnIndex(0).Resolve()
	if err != nil {
		panic(err)
	}
	return b.Addr
}

// staticFloats defines a file-static read-only table name<> of float32s.
func (g *gen) staticFloats(name string, fs ...float32) operand.Mem {
	t := g.StaticGlobal(name)
	g.DataAttributes(attr.RODATA | attr.NOPTR)
	for i, f := range fs {
		g.AddDatum(4*i, operand.F32(f))
	}
	return t
}

// jmp-style helpers take label names.
func lab(name string) operand.LabelRef { return operand.LabelRef(name) }

// m is disp(base); mi is disp(base)(index*scale).
func m(base reg.Register, disp int) operand.Mem { return operand.Mem{Base: base, Disp: disp} }
func mi(base reg.Register, disp int, index reg.Register, scale uint8) operand.Mem {
	return operand.Mem{Base: base, Disp: disp, Index: index, Scale: scale}
}

// sp is disp(SP) in the kernel's local frame; spi indexes it.
func sp(disp int) operand.Mem { return m(reg.StackPointer, disp) }
func spi(disp int, index reg.Register, scale uint8) operand.Mem {
	return mi(reg.StackPointer, disp, index, scale)
}

// static defines a file-static read-only table name<> of 8-byte words.
func (g *gen) static(name string, words ...uint64) operand.Mem {
	t := g.StaticGlobal(name)
	g.DataAttributes(attr.RODATA | attr.NOPTR)
	for i, w := range words {
		g.AddDatum(8*i, operand.U64(w))
	}
	return t
}

// static32 is static for 4-byte words.
func (g *gen) static32(name string, words ...uint32) operand.Mem {
	t := g.StaticGlobal(name)
	g.DataAttributes(attr.RODATA | attr.NOPTR)
	for i, w := range words {
		g.AddDatum(4*i, operand.U32(w))
	}
	return t
}

// off is a table at an offset.
func off(t operand.Mem, d int) operand.Mem { t.Disp += d; return t }

// compile is avo's pass.Compile without PruneJumpToFollowingLabel: a
// jump to the next instruction stays, so the generated kernels assemble
// to exactly the machine code of the hand-written ones they replaced
// (their macros ended bodies with such jumps). Nothing else differs.
var compile = pass.Concat(
	pass.Verify,
	pass.FunctionPass(pass.PruneDanglingLabels),
	pass.FunctionPass(pass.LabelTarget),
	pass.FunctionPass(pass.CFG),
	pass.InstructionPass(pass.ZeroExtend32BitOutputs),
	pass.FunctionPass(pass.Liveness),
	pass.FunctionPass(pass.AllocateRegisters),
	pass.FunctionPass(pass.BindRegisters),
	pass.FunctionPass(pass.VerifyAllocation),
	pass.FunctionPass(pass.EnsureBasePointerCalleeSaved),
	pass.Func(pass.IncludeTextFlagHeader),
	pass.FunctionPass(pass.PruneSelfMoves),
	pass.FunctionPass(pass.RequiredISAExtensions),
)

// write compiles the file and writes the assembly to out and the stubs
// (package pkg) to stubs, each only once both printed without error.
func (g *gen) write(out, stubs, pkg string) error {
	f, err := g.Result()
	if err != nil {
		return err
	}
	if err := compile.Execute(f); err != nil {
		return err
	}
	// The header names the command as quant's go:generate line runs it
	// (go run -C _asm .), from this directory.
	cfg := printer.Config{Argv: append([]string{"go", "run", "."}, os.Args[1:]...), Pkg: pkg}
	files := []struct {
		path string
		p    printer.Printer
	}{{out, printer.NewGoAsm(cfg)}, {stubs, printer.NewStubs(cfg)}}
	var bufs [][]byte
	for _, o := range files {
		b, err := o.p.Print(f)
		if err != nil {
			return fmt.Errorf("%s: %w", o.path, err)
		}
		bufs = append(bufs, b)
	}
	for i, o := range files {
		if old, err := os.ReadFile(o.path); err == nil && bytes.Equal(old, bufs[i]) {
			continue
		}
		if err := os.WriteFile(o.path, bufs[i], 0o644); err != nil {
			return err
		}
	}
	return nil
}

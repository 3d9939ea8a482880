package jinja

// cflow's changes to github.com/ardanlabs/jinja v1.8.0 (see NOTICE.md):
// the places where it rendered something other than jinja2 does now
// render what jinja2 renders or fail as jinja2 raises. A chat template
// that silently renders a different prompt is worse than one that fails.

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// UndefinedError is jinja2's UndefinedError: an operation on an undefined
// value other than printing it, testing it or iterating it.
type UndefinedError struct{ What string }

func (e *UndefinedError) Error() string { return "UndefinedError: " + e.What + " is undefined" }

// TypeError is Python's TypeError (or ZeroDivisionError, ValueError) from
// an operator jinja2 hands to Python: "a" + 1, 1 / 0, "%d" % "x".
type TypeError struct{ Msg string }

func (e *TypeError) Error() string { return "TypeError: " + e.Msg }

// describe names an expression for an error message, as jinja2 does
// ('name', or the attribute).
func describe(ex expr) string {
	switch n := ex.(type) {
	case *nameExpr:
		return "'" + n.name + "'"
	case *attrExpr:
		return describe(n.obj) + "." + n.attr
	case *itemExpr:
		return describe(n.obj) + "[...]"
	}
	return "a value"
}

// pyTypeName is Python's name of v's type, for messages.
func pyTypeName(v Value) string {
	switch v.kind {
	case KindNone:
		return "NoneType"
	case KindBool:
		return "bool"
	case KindInt:
		return "int"
	case KindFloat:
		return "float"
	case KindString:
		return "str"
	case KindList:
		return "list"
	case KindDict:
		return "dict"
	case KindCallable:
		return "function"
	}
	return "Undefined"
}

// arithmetic lists the binary operators jinja2 gives Python, which raise
// on an undefined operand (==, !=, in, ~, and, or do not).
var arithmetic = map[string]bool{"+": true, "-": true, "*": true, "/": true, "//": true, "%": true, "**": true,
	"<": true, ">": true, "<=": true, ">=": true}

func isNum(v Value) bool { return v.kind == KindInt || v.kind == KindFloat || v.kind == KindBool }

// pyBinary is a binary operator as Python evaluates it, for the operand
// types where the library's own arithmetic differs; handled false leaves
// it to the library.
func pyBinary(n *binExpr, a, b Value) (Value, bool, error) {
	if !arithmetic[n.op] {
		return Value{}, false, nil
	}
	switch {
	case a.IsUndefined():
		return Undefined(), true, &UndefinedError{describe(n.left)}
	case b.IsUndefined():
		return Undefined(), true, &UndefinedError{describe(n.right)}
	}
	unsupported := func() (Value, bool, error) {
		return Undefined(), true, &TypeError{fmt.Sprintf("unsupported operand type(s) for %s: '%s' and '%s'", n.op, pyTypeName(a), pyTypeName(b))}
	}
	switch n.op {
	case "%":
		if a.IsString() {
			s, err := pyFormat(a.AsString(), b)
			return NewString(s), true, err
		}
		if !isNum(a) || !isNum(b) {
			return unsupported()
		}
		if toFloat64(b) == 0 {
			return Undefined(), true, &TypeError{"ZeroDivisionError: modulo by zero"}
		}
		if a.IsFloat() || b.IsFloat() {
			x, y := toFloat64(a), toFloat64(b)
			m := math.Mod(x, y)
			if m != 0 && (m < 0) != (y < 0) {
				m += y
			}
			return NewFloat(m), true, nil
		}
		x, y := toInt64(a), toInt64(b)
		m := x % y
		if m != 0 && (m < 0) != (y < 0) {
			m += y
		}
		return NewInt(m), true, nil
	case "+":
		switch {
		case a.IsString() && b.IsString(), a.IsList() && b.IsList(), isNum(a) && isNum(b):
			return Value{}, false, nil
		}
		if a.IsString() || b.IsString() {
			return Undefined(), true, &TypeError{fmt.Sprintf("can only concatenate str (not \"%s\") to str", pyTypeName(b))}
		}
		return unsupported()
	case "-", "**":
		if !isNum(a) || !isNum(b) {
			return unsupported()
		}
	case "*":
		if (a.IsString() || a.IsList()) && b.IsInt() || isNum(a) && isNum(b) {
			return Value{}, false, nil
		}
		return unsupported()
	case "/", "//":
		if !isNum(a) || !isNum(b) {
			return unsupported()
		}
		if toFloat64(b) == 0 {
			return Undefined(), true, &TypeError{"ZeroDivisionError: division by zero"}
		}
		if n.op == "//" {
			if a.IsFloat() || b.IsFloat() {
				return NewFloat(math.Floor(toFloat64(a) / toFloat64(b))), true, nil
			}
			x, y := toInt64(a), toInt64(b)
			q := x / y
			if (x%y != 0) && ((x < 0) != (y < 0)) {
				q--
			}
			return NewInt(q), true, nil
		}
	case "<", ">", "<=", ">=":
		if isNum(a) && isNum(b) || a.IsString() && b.IsString() || a.IsList() && b.IsList() {
			return Value{}, false, nil
		}
		return Undefined(), true, &TypeError{fmt.Sprintf("'%s' not supported between instances of '%s' and '%s'", n.op, pyTypeName(a), pyTypeName(b))}
	}
	return Value{}, false, nil
}

// pyFloat is Python's repr of a float: the shortest digits that read back
// the same, "1.0" for a whole number, exponent form below 1e-4 and from
// 1e16 ("1e+16", "1.5e-05").
func pyFloat(f float64) string {
	switch {
	case math.IsNaN(f):
		return "nan"
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	e := strconv.FormatFloat(f, 'e', -1, 64)
	i := strings.IndexByte(e, 'e')
	exp, _ := strconv.Atoi(e[i+1:])
	if exp < -4 || exp >= 16 {
		return e
	}
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.ContainsAny(s, ".") {
		s += ".0"
	}
	return s
}

// pyFormat is Python's printf-style str % args: a tuple (a list here:
// the parser makes tuples lists) gives one value per conversion, a dict
// serves %(name)s, anything else is the one value.
func pyFormat(format string, rhs Value) (string, error) {
	var args []Value
	var dict *Dict
	switch {
	case rhs.IsList():
		args = rhs.AsList().Items
	case rhs.IsDict():
		dict = rhs.AsDict()
		args = []Value{rhs}
	default:
		args = []Value{rhs}
	}
	var b strings.Builder
	next := 0
	usedDict := false
	for i := 0; i < len(format); i++ {
		c := format[i]
		if c != '%' {
			b.WriteByte(c)
			continue
		}
		i++
		if i >= len(format) {
			return "", &TypeError{"ValueError: incomplete format"}
		}
		var arg Value
		haveArg := false
		if format[i] == '(' {
			end := strings.IndexByte(format[i:], ')')
			if end < 0 || dict == nil {
				return "", &TypeError{"format requires a mapping"}
			}
			key := format[i+1 : i+end]
			v, ok := dict.Get(key)
			if !ok {
				return "", &TypeError{fmt.Sprintf("KeyError: '%s'", key)}
			}
			arg, haveArg, usedDict = v, true, true
			i += end + 1
		}
		start := i
		for i < len(format) && strings.IndexByte("-+ 0#", format[i]) >= 0 {
			i++
		}
		flags := format[start:i]
		start = i
		for i < len(format) && (format[i] >= '0' && format[i] <= '9' || format[i] == '.') {
			i++
		}
		widthPrec := format[start:i]
		for i < len(format) && strings.IndexByte("hlL", format[i]) >= 0 {
			i++
		}
		if i >= len(format) {
			return "", &TypeError{"ValueError: incomplete format"}
		}
		verb := format[i]
		if verb == '%' {
			b.WriteByte('%')
			continue
		}
		if !haveArg {
			if next >= len(args) {
				return "", &TypeError{"not enough arguments for format string"}
			}
			arg = args[next]
			next++
		}
		spec := "%" + flags + widthPrec
		switch verb {
		case 's':
			fmt.Fprintf(&b, strings.ReplaceAll(spec, "0", "")+"s", printValue(arg))
		case 'r', 'a':
			fmt.Fprintf(&b, spec+"s", arg.String())
		case 'd', 'i', 'u':
			if !isNum(arg) {
				return "", &TypeError{fmt.Sprintf("%%%c format: a real number is required, not %s", verb, pyTypeName(arg))}
			}
			fmt.Fprintf(&b, spec+"d", toInt64(arg))
		case 'x', 'X', 'o':
			if !arg.IsInt() && !arg.IsBool() {
				return "", &TypeError{fmt.Sprintf("%%%c format: an integer is required, not %s", verb, pyTypeName(arg))}
			}
			fmt.Fprintf(&b, spec+string(verb), toInt64(arg))
		case 'e', 'E', 'f', 'F', 'g', 'G':
			if !isNum(arg) {
				return "", &TypeError{fmt.Sprintf("must be real number, not %s", pyTypeName(arg))}
			}
			if !strings.Contains(widthPrec, ".") {
				spec += ".6"
			}
			v := string(verb)
			if verb == 'F' {
				v = "f"
			}
			fmt.Fprintf(&b, spec+v, toFloat64(arg))
		case 'c':
			switch {
			case arg.IsInt():
				fmt.Fprintf(&b, spec+"c", rune(arg.AsInt()))
			case arg.IsString() && len([]rune(arg.AsString())) == 1:
				fmt.Fprintf(&b, spec+"s", arg.AsString())
			default:
				return "", &TypeError{"%c requires int or char"}
			}
		default:
			return "", &TypeError{fmt.Sprintf("ValueError: unsupported format character '%c'", verb)}
		}
	}
	if !usedDict && dict == nil && next < len(args) {
		return "", &TypeError{"not all arguments converted during string formatting"}
	}
	return b.String(), nil
}

package sql92

import (
	"bytes"

	"github.com/wheelmq/wheelmq/storage/message"
)

// Result is the three-valued outcome of an expression, plus the case where
// RocketMQ's evaluator throws. Only True delivers a message.
type Result uint8

// Results of Eval.
const (
	// ResultNull is SQL's unknown: a comparison with a missing property.
	ResultNull Result = iota
	// ResultFalse means the message does not match.
	ResultFalse
	// ResultTrue means the message matches.
	ResultTrue
	// ResultError means evaluation failed (a property that does not convert
	// to the number it is compared with, for example); the message is skipped,
	// as RocketMQ skips it when its evaluator throws.
	ResultError
)

func (r Result) String() string {
	switch r {
	case ResultNull:
		return "NULL"
	case ResultFalse:
		return "FALSE"
	case ResultTrue:
		return "TRUE"
	}
	return "ERROR"
}

// Match reports whether a message with the encoded properties props (the
// PROPERTIES field of a stored record, see storage/message) passes the
// filter. It reads props in place and does not allocate.
func (e *Expr) Match(props []byte) bool { return e.Eval(props) == ResultTrue }

// Eval evaluates the expression against the encoded properties props.
func (e *Expr) Eval(props []byte) Result {
	ev := evaluator{props: props, names: e.props}
	return ev.result(e.root)
}

// MatchMap is Match for properties held in a map (allocates).
func (e *Expr) MatchMap(props map[string]string) bool { return e.EvalMap(props) == ResultTrue }

// EvalMap is Eval for properties held in a map (allocates).
func (e *Expr) EvalMap(props map[string]string) Result {
	ev := evaluator{m: props, useMap: true, names: e.props}
	return ev.result(e.root)
}

// cachedProps is how many distinct properties one scan of the encoded
// properties resolves; further ones are looked up at each use.
const cachedProps = 8

// evaluator holds one evaluation's input and its resolved properties.
type evaluator struct {
	props  []byte
	m      map[string]string
	useMap bool
	names  []string // the expression's property names, by slot
	filled bool     // vals/found hold the first cachedProps names
	vals   [cachedProps][]byte
	found  [cachedProps]bool
}

// fill resolves the first cachedProps property names in one pass over the
// encoded properties (the last occurrence of a key wins).
func (ev *evaluator) fill() {
	ev.filled = true
	n := min(len(ev.names), cachedProps)
	if ev.useMap {
		for i := 0; i < n; i++ {
			if s, ok := ev.m[ev.names[i]]; ok {
				ev.vals[i], ev.found[i] = []byte(s), true
			}
		}
		return
	}
	for b := ev.props; len(b) > 0; {
		k, v, rest, ok := message.NextProperty(b)
		b = rest
		if !ok {
			continue
		}
		for i := 0; i < n; i++ {
			if len(k) == len(ev.names[i]) && string(k) == ev.names[i] {
				ev.vals[i], ev.found[i] = v, true
				break
			}
		}
	}
}

func (ev *evaluator) result(root *node) Result {
	v := ev.eval(root)
	switch v.kind {
	case kindNull:
		return ResultNull
	case kindBool:
		if v.b {
			return ResultTrue
		}
		return ResultFalse
	}
	return ResultError
}

func (ev *evaluator) prop(n *node) value {
	if n.slot < cachedProps {
		if !ev.filled {
			ev.fill()
		}
		if ev.found[n.slot] {
			return value{kind: kindString, s: ev.vals[n.slot]}
		}
		return vNull
	}
	var (
		v  []byte
		ok bool
	)
	if ev.useMap {
		var s string
		s, ok = ev.m[n.name]
		v = []byte(s)
	} else {
		v, ok = message.LookupPropertyBytes(ev.props, n.name)
	}
	if ok {
		return value{kind: kindString, s: v}
	}
	return vNull
}

// eval follows RocketMQ's expression classes: nulls propagate through
// comparisons, AND/OR/NOT are three-valued, and an exception (kindErr) ends
// the evaluation except where AND/OR short-circuit before reaching it.
func (ev *evaluator) eval(n *node) value {
	switch n.op {
	case opConst:
		return n.lit
	case opProp:
		return ev.prop(n)
	case opNeg:
		v := ev.eval(n.x)
		switch v.kind {
		case kindInt:
			v.i = int64(-int32(v.i))
		case kindLong:
			v.i = -v.i
		case kindDouble:
			v.f = -v.f
		case kindErr:
		default:
			return vNull // Java negates numbers only
		}
		return v
	case opNot:
		v := ev.eval(n.x)
		if v.kind == kindBool {
			v.b = !v.b
		}
		return v
	case opCast:
		v := ev.eval(n.x)
		if v.kind == kindString {
			return vFalse // a property is a string, never a Boolean
		}
		return v
	case opAnd:
		l := ev.eval(n.x)
		if l.kind == kindErr || (l.kind == kindBool && !l.b) {
			return l
		}
		r := ev.eval(n.y)
		if r.kind == kindErr || (r.kind == kindBool && !r.b) {
			return r
		}
		if l.kind == kindNull || r.kind == kindNull {
			return vNull
		}
		return vTrue
	case opOr:
		l := ev.eval(n.x)
		if l.kind == kindErr || (l.kind == kindBool && l.b) {
			return l
		}
		r := ev.eval(n.y)
		if r.kind == kindErr || (r.kind == kindBool && r.b) {
			return r
		}
		if l.kind == kindNull || r.kind == kindNull {
			return vNull
		}
		return vFalse
	case opEq:
		l := ev.eval(n.x)
		if l.kind == kindErr {
			return l
		}
		r := ev.eval(n.y)
		if r.kind == kindErr {
			return r
		}
		if ln, rn := l.kind == kindNull, r.kind == kindNull; ln || rn {
			switch {
			case ln && rn:
				return vTrue
			case ln:
				return vNull
			}
			return vFalse
		}
		c, ok := compare(l, r)
		if !ok {
			return vErr
		}
		return boolValue(c == 0)
	case opIsNull:
		v := ev.eval(n.x)
		if v.kind == kindErr {
			return v
		}
		return boolValue(v.kind == kindNull)
	case opGt, opGe, opLt, opLe:
		return ev.ordered(n)
	case opIn:
		v := ev.eval(n.x)
		if v.kind != kindString {
			return vNull
		}
		return boolValue(n.contains(v.s) != n.not)
	case opContains, opStartsWith, opEndsWith:
		v := ev.eval(n.x)
		if v.kind == kindErr {
			return v
		}
		if len(n.lit.s) == 0 || v.kind != kindString {
			return vFalse // absent (or not a string): false, not null
		}
		var hit bool
		switch n.op {
		case opContains:
			hit = bytes.Contains(v.s, n.lit.s)
		case opStartsWith:
			hit = bytes.HasPrefix(v.s, n.lit.s)
		default:
			hit = bytes.HasSuffix(v.s, n.lit.s)
		}
		return boolValue(hit != n.not)
	}
	return vErr
}

// ordered evaluates >, >=, <, <=: null if either side is null; two strings
// are both read as doubles (an error if either is not a number).
func (ev *evaluator) ordered(n *node) value {
	l := ev.eval(n.x)
	if l.kind == kindNull || l.kind == kindErr {
		return l
	}
	r := ev.eval(n.y)
	if r.kind == kindNull || r.kind == kindErr {
		return r
	}
	var (
		c  int
		ok bool
	)
	if l.kind == kindString && r.kind == kindString {
		lf, lok := parseJavaDouble(l.s)
		rf, rok := parseJavaDouble(r.s)
		c, ok = cmpDouble(lf, rf), lok && rok
	} else {
		c, ok = compare(l, r)
	}
	if !ok {
		return vErr
	}
	switch n.op {
	case opGt:
		return boolValue(c > 0)
	case opGe:
		return boolValue(c >= 0)
	case opLt:
		return boolValue(c < 0)
	}
	return boolValue(c <= 0)
}

// contains reports whether s is in the IN list.
func (n *node) contains(s []byte) bool {
	if n.set != nil {
		_, ok := n.set[string(s)]
		return ok
	}
	for _, x := range n.list {
		if string(s) == x {
			return true
		}
	}
	return false
}

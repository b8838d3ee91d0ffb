package sql92

import (
	"strconv"
	"strings"
)

// op is the operation of a node.
type op uint8

const (
	opConst      op = iota // literal: lit
	opProp                 // property lookup: name, slot
	opNeg                  // unary minus: x
	opNot                  // NOT x (three-valued)
	opCast                 // a bare property used as a condition: x (opProp)
	opAnd                  // x AND y
	opOr                   // x OR y
	opEq                   // x = y (x <> y is NOT (x = y))
	opIsNull               // x IS NULL (x IS NOT NULL is NOT (x IS NULL))
	opGt                   // x > y
	opGe                   // x >= y
	opLt                   // x < y
	opLe                   // x <= y
	opIn                   // x [NOT] IN ('a', ...): list or set, not
	opContains             // x [NOT] CONTAINS 's': lit, not
	opStartsWith           // x [NOT] STARTSWITH 's'
	opEndsWith             // x [NOT] ENDSWITH 's'
)

// node is one node of a compiled expression. One concrete type with a
// switch (rather than an interface per operation) keeps evaluation free of
// allocations: nothing escapes through interface calls.
type node struct {
	op   op
	x, y *node
	lit  value  // opConst; for the string operators, the search text
	name string // opProp
	slot int    // opProp: index into the per-evaluation property cache
	not  bool   // opIn and the string operators: negated form

	list []string            // opIn, in source order (for String)
	set  map[string]struct{} // opIn with many elements
}

// isBoolean reports whether n is what RocketMQ calls a BooleanExpression: a
// comparison, a logical operator, or the constants TRUE, FALSE and NULL.
func (n *node) isBoolean() bool {
	switch n.op {
	case opConst:
		return n.lit.kind == kindBool || n.lit.kind == kindNull
	case opProp, opNeg:
		return false
	}
	return true
}

// String renders n so that parsing the result gives the same tree: every
// compound node is parenthesized, <> and IS NOT NULL show as NOT (...),
// BETWEEN as the two comparisons it stands for.
func (n *node) String() string {
	var b strings.Builder
	n.write(&b)
	return b.String()
}

var opText = map[op]string{
	opAnd: " AND ", opOr: " OR ", opEq: " = ", opGt: " > ", opGe: " >= ", opLt: " < ", opLe: " <= ",
	opContains: " CONTAINS ", opStartsWith: " STARTSWITH ", opEndsWith: " ENDSWITH ",
}

func (n *node) write(b *strings.Builder) {
	switch n.op {
	case opConst:
		b.WriteString(n.lit.literal())
	case opProp:
		b.WriteString(n.name)
	case opCast:
		n.x.write(b)
	case opNeg:
		b.WriteString("(-")
		n.x.write(b)
		b.WriteByte(')')
	case opNot:
		b.WriteString("(NOT ")
		n.x.write(b)
		b.WriteByte(')')
	case opIsNull:
		b.WriteByte('(')
		n.x.write(b)
		b.WriteString(" IS NULL)")
	case opIn:
		b.WriteByte('(')
		n.x.write(b)
		if n.not {
			b.WriteString(" NOT")
		}
		b.WriteString(" IN (")
		for i, s := range n.list {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(quote(s))
		}
		b.WriteString("))")
	case opContains, opStartsWith, opEndsWith:
		b.WriteByte('(')
		n.x.write(b)
		if n.not {
			b.WriteString(" NOT")
		}
		b.WriteString(opText[n.op])
		b.WriteString(quote(string(n.lit.s)))
		b.WriteByte(')')
	default: // binary operators
		b.WriteByte('(')
		n.x.write(b)
		b.WriteString(opText[n.op])
		n.y.write(b)
		b.WriteByte(')')
	}
}

// literal renders a constant as it would be written in an expression.
func (v value) literal() string {
	switch v.kind {
	case kindNull:
		return "NULL"
	case kindBool:
		if v.b {
			return "TRUE"
		}
		return "FALSE"
	case kindInt, kindLong:
		return strconv.FormatInt(v.i, 10)
	case kindDouble:
		// Always with an exponent so that it lexes as a float again.
		return strconv.FormatFloat(v.f, 'e', -1, 64)
	case kindString:
		return quote(string(v.s))
	}
	return "?"
}

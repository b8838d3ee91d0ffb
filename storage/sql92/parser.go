package sql92

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// maxDepth bounds nesting (parentheses and unary operators) so that a
// hostile expression cannot exhaust the stack.
const maxDepth = 100

// Expr is a compiled expression. It is immutable and safe for concurrent
// use.
type Expr struct {
	text  string
	root  *node
	props []string // property names, indexed by node.slot
}

// Parse compiles an expression of RocketMQ's SQL92 subset (see the package
// documentation). The error is a *ParseError.
func Parse(text string) (*Expr, error) {
	p := &parser{lex: lexer{src: text}, slots: map[string]int{}}
	root, err := p.parse()
	if err != nil {
		return nil, err
	}
	return &Expr{text: text, root: root, props: p.names}, nil
}

// Text returns the expression as it was given to Parse.
func (e *Expr) Text() string { return e.text }

// String returns the canonical form of the expression: fully parenthesized,
// with <> written NOT (x = y), IS NOT NULL as NOT (x IS NULL) and BETWEEN as
// the two comparisons it stands for. Parse(e.String()) compiles to the same
// expression.
func (e *Expr) String() string { return e.root.String() }

// Properties returns the names of the properties the expression reads, in
// order of first use.
func (e *Expr) Properties() []string { return append([]string(nil), e.props...) }

type parser struct {
	lex   lexer
	tok   token // current token
	depth int
	slots map[string]int
	names []string
}

func (p *parser) errorf(pos int, format string, args ...any) *ParseError {
	return &ParseError{Text: p.lex.src, Pos: pos, Msg: fmt.Sprintf(format, args...)}
}

func (p *parser) advance() *ParseError {
	t, err := p.lex.next()
	if err != nil {
		return err
	}
	p.tok = t
	return nil
}

// parse reads the whole text as one condition.
func (p *parser) parse() (*node, *ParseError) {
	if err := p.advance(); err != nil {
		return nil, err
	}
	if p.tok.kind == tEOF {
		return nil, p.errorf(0, "empty expression: expected a condition such as a > 5")
	}
	n, err := p.orExpr()
	if err != nil {
		return nil, err
	}
	if p.tok.kind != tEOF {
		// RocketMQ silently ignores what follows a complete expression
		// ("a > 5 xyz" filters by a > 5); refusing it avoids a filter that
		// does not do what its text says.
		return nil, p.errorf(p.tok.pos, "expected AND, OR or the end of the expression, found %s", p.tok.describe())
	}
	return p.asCondition(n, 0)
}

// asCondition returns n as a condition: boolean expressions as they are, a
// bare property as "is a boolean true" (never, for string properties),
// anything else is an error.
func (p *parser) asCondition(n *node, pos int) (*node, *ParseError) {
	if n.isBoolean() {
		return n, nil
	}
	if n.op == opProp {
		return &node{op: opCast, x: n}, nil
	}
	return nil, p.errorf(pos, "%s is not a condition: compare it with =, <>, >, ... or test it with IS NULL", n)
}

func (p *parser) orExpr() (*node, *ParseError) {
	return p.logical(tOr, opOr, p.andExpr)
}

func (p *parser) andExpr() (*node, *ParseError) {
	return p.logical(tAnd, opAnd, p.equality)
}

// logical parses operand (kw operand)* left-associatively.
func (p *parser) logical(kw tokKind, o op, operand func() (*node, *ParseError)) (*node, *ParseError) {
	pos := p.tok.pos
	left, err := operand()
	if err != nil {
		return nil, err
	}
	for p.tok.kind == kw {
		if err := p.advance(); err != nil {
			return nil, err
		}
		rpos := p.tok.pos
		right, err := operand()
		if err != nil {
			return nil, err
		}
		if left, err = p.asCondition(left, pos); err != nil {
			return nil, err
		}
		if right, err = p.asCondition(right, rpos); err != nil {
			return nil, err
		}
		left = &node{op: o, x: left, y: right}
	}
	return left, nil
}

// equality parses comparison ( = comparison | <> comparison | IS [NOT] NULL )*.
func (p *parser) equality() (*node, *ParseError) {
	pos := p.tok.pos
	left, err := p.comparison()
	if err != nil {
		return nil, err
	}
	for {
		switch p.tok.kind {
		case tEq, tNe:
			neg := p.tok.kind == tNe
			if err := p.advance(); err != nil {
				return nil, err
			}
			rpos := p.tok.pos
			right, err := p.comparison()
			if err != nil {
				return nil, err
			}
			if left, err = p.equal(left, right, pos, rpos); err != nil {
				return nil, err
			}
			if neg {
				left = &node{op: opNot, x: left}
			}
		case tIs:
			if err := p.advance(); err != nil {
				return nil, err
			}
			neg := p.tok.kind == tNot
			if neg {
				if err := p.advance(); err != nil {
					return nil, err
				}
			}
			if p.tok.kind != tNull {
				return nil, p.errorf(p.tok.pos, "expected NULL after IS%s, found %s", map[bool]string{true: " NOT"}[neg], p.tok.describe())
			}
			if err := p.advance(); err != nil {
				return nil, err
			}
			left = &node{op: opIsNull, x: left}
			if neg {
				left = &node{op: opNot, x: left}
			}
		default:
			return left, nil
		}
	}
}

// equal builds left = right with RocketMQ's checks: no NULL literal (IS
// NULL is the test for a missing property) and no TRUE/FALSE literal
// compared with a non-boolean literal.
func (p *parser) equal(left, right *node, lpos, rpos int) (*node, *ParseError) {
	for _, o := range []struct {
		n   *node
		pos int
	}{{left, lpos}, {right, rpos}} {
		if o.n.op == opConst && o.n.lit.kind == kindNull {
			return nil, p.errorf(o.pos, "NULL cannot be compared with = or <>: write IS NULL or IS NOT NULL")
		}
	}
	if left.op == opConst && right.op == opConst && left.isBoolean() && !right.isBoolean() {
		return nil, p.errorf(lpos, "%s cannot be compared with %s", left, right)
	}
	return &node{op: opEq, x: left, y: right}, nil
}

// comparison parses unary followed by any number of >, >=, <, <=, [NOT]
// BETWEEN, [NOT] IN, [NOT] CONTAINS/STARTSWITH/ENDSWITH.
func (p *parser) comparison() (*node, *ParseError) {
	pos := p.tok.pos
	left, err := p.unary()
	if err != nil {
		return nil, err
	}
	for {
		kind, opPos, neg := p.tok.kind, p.tok.pos, false
		switch kind {
		case tGt, tGe, tLt, tLe:
			if err := p.advance(); err != nil {
				return nil, err
			}
			rpos := p.tok.pos
			right, err := p.unary()
			if err != nil {
				return nil, err
			}
			if left, err = p.ordered(map[tokKind]op{tGt: opGt, tGe: opGe, tLt: opLt, tLe: opLe}[kind], left, right, pos, rpos); err != nil {
				return nil, err
			}
			continue
		case tNot:
			// NOT here only starts NOT BETWEEN / IN / CONTAINS / ...
			if err := p.advance(); err != nil {
				return nil, err
			}
			switch p.tok.kind {
			case tBetween, tIn, tContains, tStartsWith, tEndsWith:
				kind, neg = p.tok.kind, true
			default:
				return nil, p.errorf(opPos, "NOT after %s must be followed by BETWEEN, IN, CONTAINS, STARTSWITH or ENDSWITH, found %s", left, p.tok.describe())
			}
		case tBetween, tIn, tContains, tStartsWith, tEndsWith:
		default:
			return left, nil
		}
		if err := p.advance(); err != nil { // the keyword
			return nil, err
		}
		switch kind {
		case tBetween:
			left, err = p.between(left, pos, neg)
		case tIn:
			left, err = p.in(left, pos, neg)
		default:
			left, err = p.stringOp(kind, left, neg)
		}
		if err != nil {
			return nil, err
		}
	}
}

// ordered builds left <op> right: only numbers (or expressions that are not
// conditions) can be ordered.
func (p *parser) ordered(o op, left, right *node, lpos, rpos int) (*node, *ParseError) {
	if err := p.orderable(left, lpos, o); err != nil {
		return nil, err
	}
	if err := p.orderable(right, rpos, o); err != nil {
		return nil, err
	}
	return &node{op: o, x: left, y: right}, nil
}

func (p *parser) orderable(n *node, pos int, o op) *ParseError {
	if n.op == opConst && n.lit.isNumber() {
		return nil
	}
	if n.op == opConst || n.isBoolean() {
		return p.errorf(pos, "%s cannot be compared with%s: only numbers and properties can", n, strings.TrimRight(opText[o], " "))
	}
	return nil
}

// between parses "lo AND hi" after [NOT] BETWEEN: x BETWEEN lo AND hi is
// (x >= lo) AND (x <= hi); x NOT BETWEEN lo AND hi is (x < lo) OR (x > hi).
func (p *parser) between(x *node, pos int, neg bool) (*node, *ParseError) {
	lpos := p.tok.pos
	lo, err := p.unary()
	if err != nil {
		return nil, err
	}
	if p.tok.kind != tAnd {
		return nil, p.errorf(p.tok.pos, "expected AND in BETWEEN ... AND ..., found %s", p.tok.describe())
	}
	if err := p.advance(); err != nil {
		return nil, err
	}
	hpos := p.tok.pos
	hi, err := p.unary()
	if err != nil {
		return nil, err
	}
	if neg {
		l, err := p.ordered(opLt, x, lo, pos, lpos)
		if err != nil {
			return nil, err
		}
		r, err := p.ordered(opGt, x, hi, pos, hpos)
		if err != nil {
			return nil, err
		}
		return &node{op: opOr, x: l, y: r}, nil
	}
	if lo.op == opConst && hi.op == opConst {
		if lo.lit.kind == kindNull || hi.lit.kind == kindNull {
			return nil, p.errorf(lpos, "BETWEEN bounds cannot be NULL")
		}
		if c, ok := compare(hi.lit, lo.lit); ok && c < 0 {
			return nil, p.errorf(lpos, "BETWEEN bounds are reversed: %s is greater than %s", lo, hi)
		}
	}
	l, err := p.ordered(opGe, x, lo, pos, lpos)
	if err != nil {
		return nil, err
	}
	r, err := p.ordered(opLe, x, hi, pos, hpos)
	if err != nil {
		return nil, err
	}
	return &node{op: opAnd, x: l, y: r}, nil
}

// inSetMin is the list size from which IN uses a set.
const inSetMin = 5

// in parses "('a', 'b', ...)" after [NOT] IN. The left side must be a
// property and the list holds string literals only.
func (p *parser) in(x *node, pos int, neg bool) (*node, *ParseError) {
	if x.op != opProp {
		return nil, p.errorf(pos, "IN needs a property on its left, found %s", x)
	}
	if p.tok.kind != tLParen {
		return nil, p.errorf(p.tok.pos, "expected '(' after IN, found %s", p.tok.describe())
	}
	n := &node{op: opIn, x: x, not: neg}
	for {
		if err := p.advance(); err != nil {
			return nil, err
		}
		if p.tok.kind != tString {
			return nil, p.errorf(p.tok.pos, "expected a string literal in the IN list, found %s", p.tok.describe())
		}
		n.list = append(n.list, p.tok.val)
		if err := p.advance(); err != nil {
			return nil, err
		}
		if p.tok.kind == tRParen {
			break
		}
		if p.tok.kind != tComma {
			return nil, p.errorf(p.tok.pos, "expected ',' or ')' in the IN list, found %s", p.tok.describe())
		}
	}
	if err := p.advance(); err != nil {
		return nil, err
	}
	if len(n.list) >= inSetMin {
		n.set = make(map[string]struct{}, len(n.list))
		for _, s := range n.list {
			n.set[s] = struct{}{}
		}
	}
	return n, nil
}

// stringOp parses the string literal after [NOT] CONTAINS/STARTSWITH/ENDSWITH.
func (p *parser) stringOp(kind tokKind, x *node, neg bool) (*node, *ParseError) {
	if p.tok.kind != tString {
		return nil, p.errorf(p.tok.pos, "expected a string literal after %s, found %s",
			strings.TrimSpace(opText[map[tokKind]op{tContains: opContains, tStartsWith: opStartsWith, tEndsWith: opEndsWith}[kind]]), p.tok.describe())
	}
	o := map[tokKind]op{tContains: opContains, tStartsWith: opStartsWith, tEndsWith: opEndsWith}[kind]
	n := &node{op: o, x: x, not: neg, lit: value{kind: kindString, s: []byte(p.tok.val)}}
	return n, p.advance()
}

// unary parses + unary | - unary | NOT unary | primary.
func (p *parser) unary() (*node, *ParseError) {
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > maxDepth {
		return nil, p.errorf(p.tok.pos, "expression nested more than %d levels deep", maxDepth)
	}
	switch p.tok.kind {
	case tPlus:
		if err := p.advance(); err != nil {
			return nil, err
		}
		return p.unary()
	case tMinus:
		if err := p.advance(); err != nil {
			return nil, err
		}
		x, err := p.unary()
		if err != nil {
			return nil, err
		}
		return &node{op: opNeg, x: x}, nil
	case tNot:
		if err := p.advance(); err != nil {
			return nil, err
		}
		pos := p.tok.pos
		x, err := p.unary()
		if err != nil {
			return nil, err
		}
		if x, err = p.asCondition(x, pos); err != nil {
			return nil, err
		}
		return &node{op: opNot, x: x}, nil
	}
	return p.primary()
}

// primary parses a literal, a property or a parenthesized expression.
func (p *parser) primary() (*node, *ParseError) {
	t := p.tok
	var n *node
	switch t.kind {
	case tString:
		n = &node{op: opConst, lit: value{kind: kindString, s: []byte(t.val)}}
	case tDecimal:
		v, err := strconv.ParseInt(strings.TrimRight(t.text, "lL"), 10, 64)
		if err != nil {
			return nil, p.errorf(t.pos, "number %s is out of range (at most %d)", t.text, int64(math.MaxInt64))
		}
		kind := kindLong
		if v >= math.MinInt32 && v <= math.MaxInt32 {
			kind = kindInt
		}
		n = &node{op: opConst, lit: value{kind: kind, i: v}}
	case tFloat:
		f, err := strconv.ParseFloat(t.text, 64)
		if err != nil && !isRangeErr(err) || math.IsInf(f, 0) {
			return nil, p.errorf(t.pos, "number %s is out of range (at most %g)", t.text, math.MaxFloat64)
		}
		n = &node{op: opConst, lit: value{kind: kindDouble, f: f}}
	case tTrue, tFalse:
		n = &node{op: opConst, lit: value{kind: kindBool, b: t.kind == tTrue}}
	case tNull:
		n = &node{op: opConst}
	case tIdent:
		slot, ok := p.slots[t.text]
		if !ok {
			slot = len(p.names)
			p.slots[t.text] = slot
			p.names = append(p.names, t.text)
		}
		n = &node{op: opProp, name: t.text, slot: slot}
	case tLParen:
		if err := p.advance(); err != nil {
			return nil, err
		}
		inner, err := p.orExpr()
		if err != nil {
			return nil, err
		}
		if p.tok.kind != tRParen {
			return nil, p.errorf(p.tok.pos, "expected ')' to close the '(' at column %d, found %s",
				(&ParseError{Text: p.lex.src, Pos: t.pos}).Column(), p.tok.describe())
		}
		return inner, p.advance()
	default:
		return nil, p.errorf(t.pos, "expected a property, a literal or '(', found %s", t.describe())
	}
	return n, p.advance()
}

func isRangeErr(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

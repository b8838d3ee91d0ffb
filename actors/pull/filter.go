package pull

import (
	"errors"
	"fmt"
	"strings"

	"github.com/wheelmq/wheelmq/storage/message"
	"github.com/wheelmq/wheelmq/storage/sql92"
)

// Expression types of a subscription (SubscriptionData.expressionType and
// the PULL_MESSAGE header field expressionType).
const (
	ExpressionTag   = "TAG"
	ExpressionSQL92 = "SQL92"
)

// ErrUnsupportedExpression means a subscription's expression type is
// neither TAG (or empty) nor SQL92.
var ErrUnsupportedExpression = errors.New("pull: unsupported expression type")

// Filter is a subscription filter: a tag filter (All, or a set of tag hash
// codes checked against consume-queue units) or, when SQL is set, a SQL92
// expression evaluated against each message's properties. A SQL filter
// lets every unit through Match (RocketMQ has no tag pre-filter for SQL92
// either) and decides in MatchRecord.
type Filter struct {
	All   bool
	Codes map[int64]struct{}
	// SQL is the compiled SQL92 expression, nil for tag filters.
	SQL *sql92.Expr
}

// ParseFilter parses a TAG subscription expression: "*" or "" (everything)
// or "TagA || TagB".
func ParseFilter(expr string) Filter {
	expr = strings.TrimSpace(expr)
	if expr == "" || expr == "*" {
		return Filter{All: true}
	}
	f := Filter{Codes: map[int64]struct{}{}}
	for _, tag := range strings.Split(expr, "||") {
		tag = strings.TrimSpace(tag)
		if tag == "" {
			continue
		}
		f.Codes[message.TagsHashCode(tag)] = struct{}{}
	}
	if len(f.Codes) == 0 {
		return Filter{All: true}
	}
	return f
}

// CompileFilter builds the filter of a subscription: exprType "" or "TAG"
// (any case) is a tag expression, "SQL92" a SQL92 expression. The error is a
// *sql92.ParseError for SQL92 text that does not compile, or wraps
// ErrUnsupportedExpression.
func CompileFilter(exprType, expr string) (Filter, error) {
	switch {
	case exprType == "" || strings.EqualFold(exprType, ExpressionTag):
		return ParseFilter(expr), nil
	case strings.EqualFold(exprType, ExpressionSQL92):
		e, err := sql92.Parse(expr)
		if err != nil {
			return Filter{}, err
		}
		return Filter{All: true, SQL: e}, nil
	}
	return Filter{}, fmt.Errorf("%w %q (supported: TAG, SQL92)", ErrUnsupportedExpression, exprType)
}

// Match reports whether a unit with the tag hash code passes.
func (f Filter) Match(code int64) bool {
	if f.All {
		return true
	}
	_, ok := f.Codes[code]
	return ok
}

// NeedsRecord reports whether the filter must see each message's stored
// record (MatchRecord) and not only its consume-queue unit.
func (f Filter) NeedsRecord() bool { return f.SQL != nil }

// MatchRecord reports whether the stored record rec passes a SQL92 filter,
// reading its properties in place. A record that does not parse does not
// match. Tag filters pass every record.
func (f Filter) MatchRecord(rec []byte) bool {
	if f.SQL == nil {
		return true
	}
	l, err := message.ParseLayout(rec)
	if err != nil {
		return false
	}
	return f.SQL.Match(l.Properties(rec))
}

package pull

import (
	"strings"

	"github.com/wheelmq/wheelmq/storage/message"
)

// Filter is a tag subscription: All, or a set of tag hash codes.
type Filter struct {
	All   bool
	Codes map[int64]struct{}
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

// Match reports whether a unit with the tag hash code passes.
func (f Filter) Match(code int64) bool {
	if f.All {
		return true
	}
	_, ok := f.Codes[code]
	return ok
}

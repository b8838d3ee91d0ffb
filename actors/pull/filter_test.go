package pull

import (
	"testing"

	"github.com/wheelmq/wheelmq/storage/message"
)

func TestParseFilter(t *testing.T) {
	h := message.TagsHashCode
	tests := []struct {
		expr    string
		all     bool
		codes   []int64 // exact code set when !all
		match   []string
		noMatch []string
	}{
		{expr: "*", all: true, match: []string{"TagA", "", "anything"}},
		{expr: "", all: true, match: []string{"TagA", ""}},
		{expr: "  *  ", all: true, match: []string{"x"}},
		{expr: "||", all: true, match: []string{"x"}},
		{expr: "TagA", codes: []int64{h("TagA")}, match: []string{"TagA"}, noMatch: []string{"TagB", "taga", ""}},
		{expr: "TagA || TagB", codes: []int64{h("TagA"), h("TagB")},
			match: []string{"TagA", "TagB"}, noMatch: []string{"TagC", "TagA || TagB", ""}},
		{expr: "TagA||TagB||", codes: []int64{h("TagA"), h("TagB")}, match: []string{"TagB"}, noMatch: []string{"TagC"}},
		{expr: " a || a ", codes: []int64{97}, match: []string{"a"}, noMatch: []string{"b"}},
	}
	for _, tt := range tests {
		f := ParseFilter(tt.expr)
		if f.All != tt.all {
			t.Errorf("ParseFilter(%q).All = %v, want %v", tt.expr, f.All, tt.all)
		}
		if !tt.all {
			if len(f.Codes) != len(tt.codes) {
				t.Errorf("ParseFilter(%q) has %d codes, want %d", tt.expr, len(f.Codes), len(tt.codes))
			}
			for _, c := range tt.codes {
				if _, ok := f.Codes[c]; !ok {
					t.Errorf("ParseFilter(%q) lacks code %d", tt.expr, c)
				}
			}
		}
		for _, tag := range tt.match {
			if !f.Match(h(tag)) {
				t.Errorf("ParseFilter(%q).Match(%q) = false, want true", tt.expr, tag)
			}
		}
		for _, tag := range tt.noMatch {
			if f.Match(h(tag)) {
				t.Errorf("ParseFilter(%q).Match(%q) = true, want false", tt.expr, tag)
			}
		}
	}
}

package sql92

import (
	"testing"

	"github.com/wheelmq/wheelmq/storage/message"
)

// benchProps is a realistic property set as a Go producer writes it.
var benchProps = message.EncodeProperties(map[string]string{
	"TAGS": "TagB", "KEYS": "order-42", "UNIQ_KEY": "7F0000010A2B18B4AAC25E3B6E8A0000",
	"WAIT": "true", "region": "eu", "price": "42", "level": "3",
})

// BenchmarkTagSetMatch is the tag filter the pull stage applies to a
// consume-queue unit: one lookup of the unit's tag hash in a set.
func BenchmarkTagSetMatch(b *testing.B) {
	set := map[int64]struct{}{message.TagsHashCode("TagA"): {}, message.TagsHashCode("TagB"): {}}
	code := message.TagsHashCode("TagB")
	n := 0
	for b.Loop() {
		if _, ok := set[code]; ok {
			n++
		}
	}
	if n == 0 {
		b.Fatal("no match")
	}
}

// BenchmarkMatch evaluates compiled expressions against the encoded
// properties of a stored record.
func BenchmarkMatch(b *testing.B) {
	for _, bc := range []struct{ name, expr string }{
		{"tags-in", "TAGS IN ('TagA', 'TagB')"},
		{"numeric", "price > 10"},
		{"three-props", "region = 'eu' AND price BETWEEN 10 AND 100 AND level IN ('1','2','3')"},
		{"missing", "absent IS NULL OR absent > 1"},
	} {
		e, err := Parse(bc.expr)
		if err != nil {
			b.Fatal(err)
		}
		if !e.Match(benchProps) {
			b.Fatalf("%s does not match", bc.expr)
		}
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				e.Match(benchProps)
			}
		})
	}
}

// BenchmarkParse measures compiling (done once per subscription).
func BenchmarkParse(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse("region = 'eu' AND price BETWEEN 10 AND 100 AND level IN ('1','2','3')"); err != nil {
			b.Fatal(err)
		}
	}
}

package remoting

import (
	"math"
	"testing"
)

// TestTimerCursorRoundTrip: a cursor reads back as written, negative and
// extreme times included; anything else is refused.
func TestTimerCursorRoundTrip(t *testing.T) {
	for _, c := range []struct {
		ms  int64
		seq uint64
	}{{1764950400000, 17}, {0, 0}, {-5, 3}, {math.MinInt64, math.MaxUint64}, {math.MaxInt64, 1}} {
		s := FormatTimerCursor(c.ms, c.seq)
		ms, seq, err := ParseTimerCursor(s)
		if err != nil || ms != c.ms || seq != c.seq {
			t.Errorf("%q read back as %d, %d, %v; want %d, %d", s, ms, seq, err, c.ms, c.seq)
		}
	}
	for _, s := range []string{"", "-", "12", "12-", "-12", "a-1", "1-b", "1--2", "1-2-3", "1 -2"} {
		if _, _, err := ParseTimerCursor(s); err == nil {
			t.Errorf("%q accepted", s)
		}
	}
}

package grpcgw

import (
	"testing"
	"time"
)

// A signed date is fresh within the skew of the server's clock, or of the
// clock shifted by a configured offset; anything else, or a date that
// does not parse, is stale.
func TestSignatureFreshness(t *testing.T) {
	now := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	v := verifier{skew: 15 * time.Minute, offsets: []time.Duration{0, 8 * time.Hour}, now: func() time.Time { return now }}
	for _, c := range []struct {
		at   time.Time
		want bool
	}{
		{now, true},
		{now.Add(-15 * time.Minute), true},
		{now.Add(14 * time.Minute), true},
		{now.Add(-16 * time.Minute), false},
		{now.Add(20 * time.Minute), false},
		{now.Add(8*time.Hour + 10*time.Minute), true}, // a UTC+8 client's local time
		{now.Add(4 * time.Hour), false},
		{time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC), false},
	} {
		if got := v.fresh(c.at.Format(dateTimeLayout)); got != c.want {
			t.Errorf("%s: fresh %v, want %v", c.at, got, c.want)
		}
	}
	for _, bad := range []string{"", "2026-12-05T12:00:00Z", "20261205T120000", "x"} {
		if v.fresh(bad) {
			t.Errorf("%q fresh", bad)
		}
	}
}

func TestParseOffsets(t *testing.T) {
	got, err := ParseOffsets(" 8h, -5h30m ,")
	if err != nil || len(got) != 2 || got[0] != 8*time.Hour || got[1] != -5*time.Hour-30*time.Minute {
		t.Fatalf("%v %v", got, err)
	}
	for _, bad := range []string{"8", "15h", "x"} {
		if _, err := ParseOffsets(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

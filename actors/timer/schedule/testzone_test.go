package schedule

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/actors/timer/schedule/testzone"
)

// TestMadeUpZoneMatchesOracle computes fires in made-up zones whose clock
// jumps by odd numbers of seconds (the zones of the end-to-end test,
// cmd/wheelmq TestDSTRecurringTimer) and in New York around both of its
// 2026 changes, and compares them with testzone.Fires, the rules by brute
// force: skipped wall times do not fire, repeated ones fire once, none
// is doubled or missing.
func TestMadeUpZoneMatchesOracle(t *testing.T) {
	base := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	every := func(time.Time) bool { return true }
	even := func(w time.Time) bool { return w.Second()%2 == 0 }
	minute := func(w time.Time) bool { return w.Second() == 0 }
	for _, c := range []struct {
		name, spec string
		zone       testzone.Zone
		loc        *time.Location
		match      func(time.Time) bool
		from       time.Time
		span       time.Duration
	}{
		{name: "every second", spec: "* * * * * *", match: every, from: base, span: time.Minute, zone: testzone.Zone{
			Initial: testzone.Offset{Name: "TST", Seconds: 3600},
			Changes: []testzone.Change{
				{At: base.Add(10 * time.Second), To: testzone.Offset{Name: "TDT", Seconds: 3603, DST: true}},
				{At: base.Add(20 * time.Second), To: testzone.Offset{Name: "TST", Seconds: 3592}},
			}}},
		{name: "even seconds", spec: "*/2 * * * * *", match: even, from: base, span: time.Minute, zone: testzone.Zone{
			Initial: testzone.Offset{Name: "TST", Seconds: -7},
			Changes: []testzone.Change{
				{At: base.Add(7 * time.Second), To: testzone.Offset{Name: "TDT", Seconds: -2, DST: true}},
				{At: base.Add(13 * time.Second), To: testzone.Offset{Name: "TST", Seconds: -27}},
				{At: base.Add(30 * time.Second), To: testzone.Offset{Name: "TDT", Seconds: 3600, DST: true}},
			}}},
		{name: "New York fall back", spec: "* * * * * *", match: every, loc: ny,
			from: time.Date(2026, 11, 1, 5, 59, 0, 0, time.UTC), span: 62 * time.Minute},
		{name: "New York spring forward", spec: "0 * * * * *", match: minute, loc: ny,
			from: time.Date(2026, 3, 8, 6, 50, 0, 0, time.UTC), span: 30 * time.Minute},
	} {
		loc := c.loc
		if loc == nil {
			data, err := testzone.TZif(c.zone)
			if err != nil {
				t.Fatal(err)
			}
			if loc, err = time.LoadLocationFromTZData("Test/DST", data); err != nil {
				t.Fatal(err)
			}
		}
		spec, err := parser.Parse(c.spec)
		if err != nil {
			t.Fatal(err)
		}
		s := &Schedule{text: c.spec, spec: spec, loc: loc}
		want := testzone.Fires(loc, c.match, c.from, c.from.Add(c.span))
		ms := c.from.UnixMilli()
		for i, w := range want {
			ms = s.Next(ms)
			if ms != w.UnixMilli() {
				t.Fatalf("%s: fire %d at %s, want %s", c.name, i+1, time.UnixMilli(ms).UTC(), w.UTC())
			}
		}
	}
}

// TestRandomZonesMatchOracle does the same over 300 made-up zones drawn
// from a fixed seed: up to five clock changes a few seconds apart, each
// a jump of up to 40 s either way, and second steps of 1, 2, 3 and 7.
func TestRandomZonesMatchOracle(t *testing.T) {
	r := rand.New(rand.NewPCG(28, 3))
	base := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	for i := range 300 {
		step := []int{1, 2, 3, 7}[r.IntN(4)]
		z := testzone.Zone{Initial: testzone.Offset{Name: "TZ0", Seconds: int32(r.IntN(7200) - 3600)}}
		at, off := base, z.Initial.Seconds
		for c := range r.IntN(6) {
			at = at.Add(time.Duration(1+r.IntN(20)) * time.Second)
			off += int32(r.IntN(81) - 40)
			z.Changes = append(z.Changes, testzone.Change{At: at, To: testzone.Offset{Name: fmt.Sprintf("TZ%d", c+1), Seconds: off}})
		}
		data, err := testzone.TZif(z)
		if err != nil {
			t.Fatal(err)
		}
		loc, err := time.LoadLocationFromTZData("Test/Random", data)
		if err != nil {
			t.Fatal(err)
		}
		text := fmt.Sprintf("*/%d * * * * *", step)
		spec, err := parser.Parse(text)
		if err != nil {
			t.Fatal(err)
		}
		s := &Schedule{text: text, spec: spec, loc: loc}
		want := testzone.Fires(loc, func(w time.Time) bool { return w.Second()%step == 0 }, base, base.Add(3*time.Minute))
		ms := base.UnixMilli()
		for j, w := range want {
			ms = s.Next(ms)
			if ms != w.UnixMilli() {
				t.Fatalf("zone %d %+v, %q: fire %d at %s, want %s", i, z, text, j+1, time.UnixMilli(ms).UTC(), w.UTC())
			}
		}
	}
}

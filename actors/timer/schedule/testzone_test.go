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
		s, err := newCron(c.spec, spec, loc)
		if err != nil {
			t.Fatal(err)
		}
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
		s, err := newCron(text, spec, loc)
		if err != nil {
			t.Fatal(err)
		}
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

// TestRandomHourZonesMatchOracle: minute and hour fields in 40 made-up
// zones with up to four changes of up to an hour either way (whole
// minutes in half of them, any seconds in the other half), minutes to
// hours apart, over 4 hours. robfig's search in the zone itself failed
// most of them: it adds whole hours and truncates absolute time to the
// minute.
func TestRandomHourZonesMatchOracle(t *testing.T) {
	r := rand.New(rand.NewPCG(28, 4))
	base := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	for i := range 40 {
		unit := int32(60)
		if i%2 == 1 {
			unit = 1
		}
		z := testzone.Zone{Initial: testzone.Offset{Name: "TZ0", Seconds: int32(r.IntN(7200)-3600) / unit * unit}}
		at, off := base, z.Initial.Seconds
		for c := range r.IntN(5) {
			at = at.Add(time.Duration(1+r.IntN(7200)) * time.Second)
			off += int32(r.IntN(7201)-3600) / unit * unit
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
		for _, c := range []struct {
			text  string
			match func(time.Time) bool
		}{
			{"0 */5 * * * *", func(w time.Time) bool { return w.Second() == 0 && w.Minute()%5 == 0 }},
			{"30 7 * * * *", func(w time.Time) bool { return w.Second() == 30 && w.Minute() == 7 }},
			{"0 0 */2 * * *", func(w time.Time) bool { return w.Second() == 0 && w.Minute() == 0 && w.Hour()%2 == 0 }},
		} {
			spec, err := parser.Parse(c.text)
			if err != nil {
				t.Fatal(err)
			}
			s, err := newCron(c.text, spec, loc)
			if err != nil {
				t.Fatal(err)
			}
			ms := base.UnixMilli()
			for j, w := range testzone.Fires(loc, c.match, base, base.Add(4*time.Hour)) {
				ms = s.Next(ms)
				if ms != w.UnixMilli() {
					t.Fatalf("zone %d %+v, %q: fire %d at %s, want %s", i, z, c.text, j+1, time.UnixMilli(ms).UTC(), w.UTC())
				}
			}
		}
	}
}

// TestRealZonesMatchOracle compares Next with the oracle for three hours
// either side of each of the 2026 changes of zones with whole-hour,
// half-hour (Lord Howe: 02:00 -> 02:30 and back) and 45-minute (Chatham)
// offsets or changes.
func TestRealZonesMatchOracle(t *testing.T) {
	for _, name := range []string{"Australia/Lord_Howe", "America/New_York", "Europe/Berlin", "America/St_Johns", "Pacific/Chatham"} {
		loc, err := time.LoadLocation(name)
		if err != nil {
			t.Fatal(err)
		}
		at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		for range 2 {
			_, change := at.In(loc).ZoneBounds()
			for _, c := range []struct {
				text  string
				match func(time.Time) bool
			}{
				{"0 */5 * * * *", func(w time.Time) bool { return w.Second() == 0 && w.Minute()%5 == 0 }},
				{"0 0 */2 * * *", func(w time.Time) bool { return w.Second() == 0 && w.Minute() == 0 && w.Hour()%2 == 0 }},
				{"0 0 * * * *", func(w time.Time) bool { return w.Second() == 0 && w.Minute() == 0 }},
				{"0 45 1 * * *", func(w time.Time) bool { return w.Second() == 0 && w.Minute() == 45 && w.Hour() == 1 }},
			} {
				s, err := Parse("CRON_TZ="+name+" "+c.text, time.Second, 0)
				if err != nil {
					t.Fatal(err)
				}
				from := change.Add(-3 * time.Hour)
				ms := from.UnixMilli()
				for j, w := range testzone.Fires(loc, c.match, from, change.Add(3*time.Hour)) {
					ms = s.Next(ms)
					if ms != w.UnixMilli() {
						t.Fatalf("%s %q around %s: fire %d at %s, want %s", name, c.text, change.In(loc), j+1,
							time.UnixMilli(ms).In(loc), w.In(loc))
					}
				}
			}
			at = change.Add(time.Hour)
		}
	}
}

// Every two hours at Lord Howe across its fall back on 2026-04-05 (02:00
// +11 -> 01:30 +10:30): 00:00 (+11), then 02:00 (+10:30), two and a half
// real hours later.
func TestLordHoweHalfHourFallBack(t *testing.T) {
	lh := "Australia/Lord_Howe"
	from := time.Date(2026, 4, 4, 12, 30, 0, 0, time.UTC) // 23:30 +11
	got := fires(t, "CRON_TZ="+lh+" 0 0 */2 * * *", from, 3)
	expect(t, got, time.Date(2026, 4, 4, 13, 0, 0, 0, time.UTC), time.Date(2026, 4, 4, 15, 30, 0, 0, time.UTC),
		time.Date(2026, 4, 4, 17, 30, 0, 0, time.UTC))
}

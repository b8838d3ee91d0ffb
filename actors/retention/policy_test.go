package retention

import (
	"math"
	"testing"
	"time"
)

// day is a local date the tests place their clocks on.
var day = time.Date(2026, 3, 10, 0, 0, 0, 0, time.Local)

// segs builds n segments of 100 bytes; ages[i] is how long ago segment i's
// newest message was stored (0: unknown).
func segs(now time.Time, ages ...time.Duration) []Segment {
	out := make([]Segment, len(ages))
	for i, a := range ages {
		out[i] = Segment{Base: int64(i) * 100, End: int64(i+1) * 100}
		if a > 0 {
			out[i].NewestMs = now.Add(-a).UnixMilli()
		}
	}
	return out
}

func TestDecide(t *testing.T) {
	sched, err := ParseSchedule("04:00")
	if err != nil {
		t.Fatal(err)
	}
	pol := Policy{Retention: 72 * time.Hour, Schedule: sched, CleanRatio: 0.75, ForceRatio: 0.85, MaxPerRound: 3}
	at4 := day.Add(4*time.Hour + 30*time.Minute)
	at5 := day.Add(5*time.Hour + 1*time.Minute)
	old, young := 80*time.Hour, time.Hour
	none := []PinValue{{Name: "dispatch", Offset: math.MaxInt64}}
	tests := []struct {
		name       string
		pol        Policy
		now        time.Time
		ages       []time.Duration
		ratio      float64
		pins       []PinValue
		wantDelete int
		wantWanted int
		wantReason string
		wantHeldBy string
	}{
		{"expired, in the window", pol, at4, []time.Duration{old, old, young, young}, 0.1, none, 2, 2, ReasonExpired, ""},
		{"expired, outside the window", pol, at5, []time.Duration{old, old, young, young}, 0.1, none, 0, 0, "", ""},
		{"expired, outside the window, disk above clean", pol, at5, []time.Duration{old, old, young, young}, 0.8, none, 2, 2, ReasonDisk, ""},
		{"young only, disk above clean", pol, at5, []time.Duration{young, young, young}, 0.8, none, 0, 0, "", ""},
		{"forced: young go too, oldest first", pol, at5, []time.Duration{young, young, young, young}, 0.86, none, 3, 3, ReasonForced, ""},
		{"forced keeps the last segment", pol, at5, []time.Duration{young, young}, 0.95, none, 1, 1, ReasonForced, ""},
		{"per-round limit", pol, at4, []time.Duration{old, old, old, old, old, young}, 0.1, none, 3, 3, ReasonExpired, ""},
		{"stops at the first young segment", pol, at4, []time.Duration{old, young, old, young}, 0.1, none, 1, 1, ReasonExpired, ""},
		{"unknown age never expires", pol, at4, []time.Duration{0, old, young}, 0.1, none, 0, 0, "", ""},
		{"last segment never goes even when expired", pol, at4, []time.Duration{old}, 0.1, none, 0, 0, "", ""},
		{"exactly the retention is expired", pol, at4, []time.Duration{72 * time.Hour, young}, 0.1, none, 1, 1, ReasonExpired, ""},
		{"timer pin inside the second segment", pol, at4, []time.Duration{old, old, old, young}, 0.1,
			[]PinValue{{Name: "dispatch", Offset: 390}, {Name: PinTimerWheel, Offset: 150}}, 1, 3, ReasonExpired, PinTimerWheel},
		{"pin at a segment end lets it go", pol, at4, []time.Duration{old, old, old, young}, 0.1,
			[]PinValue{{Name: PinTimerWheel, Offset: 200}}, 2, 3, ReasonExpired, PinTimerWheel},
		{"pin at zero holds everything", pol, at4, []time.Duration{old, old, young}, 0.1,
			[]PinValue{{Name: "dispatch", Offset: 0}}, 0, 2, ReasonExpired, "dispatch"},
		{"forced deletion respects pins", pol, at5, []time.Duration{young, young, young, young}, 0.99,
			[]PinValue{{Name: PinTimerWheel, Offset: 250}}, 2, 3, ReasonForced, PinTimerWheel},
		{"no age limit: only forced", Policy{Schedule: sched, CleanRatio: 0.75, ForceRatio: 0.85}, at4,
			[]time.Duration{old, old, young}, 0.8, none, 0, 0, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := tt.pol.Decide(Input{Now: tt.now, Segments: segs(tt.now, tt.ages...), UsedRatio: tt.ratio, Pins: tt.pins})
			if len(d.Delete) != tt.wantDelete || len(d.Wanted) != tt.wantWanted || d.Reason != tt.wantReason || d.HeldBy != tt.wantHeldBy {
				t.Fatalf("delete %d wanted %d reason %q held by %q; want %d %d %q %q",
					len(d.Delete), len(d.Wanted), d.Reason, d.HeldBy, tt.wantDelete, tt.wantWanted, tt.wantReason, tt.wantHeldBy)
			}
			for i, s := range d.Delete {
				if s.Base != int64(i)*100 || s.End > d.Limit {
					t.Fatalf("deleted %+v at %d beyond limit %d", s, i, d.Limit)
				}
			}
		})
	}
}

func TestRollBelow(t *testing.T) {
	wanted := []Segment{{0, 100, 1}, {100, 200, 1}, {200, 300, 1}}
	tests := []struct {
		name string
		d    Decision
		pins []PinValue
		want int64
	}{
		{"timer pin holds: roll up to the wanted end",
			Decision{Wanted: wanted, Delete: wanted[:1], HeldBy: PinTimerWheel, HeldAt: 150},
			[]PinValue{{PinTimerWheel, 150}, {"dispatch", 1000}}, 300},
		{"another pin lower than the wanted end caps it",
			Decision{Wanted: wanted, Delete: wanted[:1], HeldBy: PinTimerWheel, HeldAt: 150},
			[]PinValue{{PinTimerWheel, 150}, {"dispatch", 250}}, 250},
		{"dispatch holds: no roll", Decision{Wanted: wanted, Delete: nil, HeldBy: "dispatch", HeldAt: 50},
			[]PinValue{{PinTimerWheel, 80}, {"dispatch", 50}}, 0},
		{"nothing held", Decision{Wanted: wanted, Delete: wanted}, []PinValue{{PinTimerWheel, 1000}}, 0},
		{"other pin at the timer pin", Decision{Wanted: wanted, Delete: wanted[:1], HeldBy: PinTimerWheel, HeldAt: 150},
			[]PinValue{{PinTimerWheel, 150}, {"timer_enqueue", 150}}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.d.RollBelow(PinTimerWheel, tt.pins); got != tt.want {
				t.Fatalf("RollBelow = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestSchedule(t *testing.T) {
	tests := []struct {
		spec    string
		at      time.Duration // after local midnight
		open    bool
		wantErr bool
	}{
		{"04:00", 4 * time.Hour, true, false},
		{"04:00", 4*time.Hour + 59*time.Minute, true, false},
		{"04:00", 5 * time.Hour, false, false},
		{"04:00", 3*time.Hour + 59*time.Minute, false, false},
		{"23:30", 23*time.Hour + 45*time.Minute, true, false},
		{"23:30", 20 * time.Minute, true, false}, // the window runs past midnight
		{"23:30", 31 * time.Minute, false, false},
		{"04:00;16:00", 16*time.Hour + 10*time.Minute, true, false},
		{"any", 13 * time.Hour, true, false},
		{"ANY", 0, true, false},
		{"4", 0, false, true},
		{"24:00", 0, false, true},
		{"04:60", 0, false, true},
		{"04:5", 0, false, true},
		{"", 0, false, true},
		{"04:00;", 0, false, true},
	}
	for _, tt := range tests {
		s, err := ParseSchedule(tt.spec)
		if (err != nil) != tt.wantErr {
			t.Fatalf("ParseSchedule(%q): %v", tt.spec, err)
		}
		if err != nil {
			continue
		}
		if got := s.Open(day.Add(tt.at)); got != tt.open {
			t.Errorf("%q at %s: open %v, want %v", tt.spec, tt.at, got, tt.open)
		}
		if back, err := ParseSchedule(s.String()); err != nil || back.String() != s.String() {
			t.Errorf("%q does not round-trip: %q %v", tt.spec, s.String(), err)
		}
	}
}

func TestDiskFullRemark(t *testing.T) {
	var d Disk
	if d.Full() || d.Ratio() != 0 {
		t.Fatal("zero Disk is not empty")
	}
	if !d.set(0.913, true) || d.set(0.95, true) || !d.Full() {
		t.Fatal("transitions")
	}
	want := "service not available now. It may be caused by one of the following reasons: the broker's disk is full " +
		"[CL:  0.95 CQ:  0.95 INDEX:  0.95], messages are put to the slave, message store has been shut down, etc."
	if got := d.FullRemark(); got != want {
		t.Fatalf("remark %q", got)
	}
	u, err := StatfsUsage(t.TempDir())()
	if err != nil || u <= 0 || u > 1 {
		t.Fatalf("statfs usage %v %v", u, err)
	}
}

// FuzzParseSchedule: any input is either refused with an error or parsed
// into a schedule that formats back to an equivalent one.
func FuzzParseSchedule(f *testing.F) {
	for _, s := range []string{"04:00", "any", "ANY", "04:00;16:30", "23:59", "24:00", "4", "04:5", "", ";", " 04:00 ; 05:00 "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		s, err := ParseSchedule(spec)
		if err != nil {
			return
		}
		back, err := ParseSchedule(s.String())
		if err != nil || back.String() != s.String() {
			t.Fatalf("%q parsed as %q, which does not round-trip: %v", spec, s.String(), err)
		}
		for h := 0; h < 24; h++ {
			at := day.Add(time.Duration(h) * time.Hour)
			if s.Open(at) != back.Open(at) {
				t.Fatalf("%q and %q disagree at %s", spec, s.String(), at)
			}
		}
	})
}

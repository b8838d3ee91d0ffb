package rates

import (
	"fmt"
	"testing"
	"time"
)

func seriesOf(t *testing.T, all []Series, name string) Series {
	t.Helper()
	for _, s := range all {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no series %s", name)
	return Series{}
}

// TestRatesFromConsecutiveReadings: known counter values at known times
// give exact per-second rates, one per interval, stamped with the
// interval's end; gauges are their values; a stage seen late starts with
// its own first reading.
func TestRatesFromConsecutiveReadings(t *testing.T) {
	r := NewRings(10, 10*time.Second)
	t0 := time.Unix(1_800_000_000, 0)
	add := func(sec int, in, fired, pending int64, stages ...StageCount) {
		r.Add(Reading{Sample: Sample{At: t0.Add(time.Duration(sec) * time.Second), MsgsIn: in, TimersFired: fired,
			TimersPending: pending}, Stages: stages})
	}
	add(0, 100, 0, 5, StageCount{"writer", 10})
	add(10, 150, 20, 3, StageCount{"writer", 30})
	add(30, 150, 20, 3, StageCount{"writer", 30}, StageCount{"late", 1000}) // 20 s: a late tick is still exact
	add(40, 400, 25, 0, StageCount{"writer", 80}, StageCount{"late", 1040})
	all := r.Series()
	in := seriesOf(t, all, "msgs_in")
	want := []Point{{t0.Add(10 * time.Second), 5}, {t0.Add(30 * time.Second), 0}, {t0.Add(40 * time.Second), 25}}
	if fmt.Sprint(in.Points) != fmt.Sprint(want) || in.Gauge {
		t.Fatalf("msgs_in = %v, want %v", in.Points, want)
	}
	if got := seriesOf(t, all, "timers_fired").Points; got[0].V != 2 || got[1].V != 0 || got[2].V != 0.5 {
		t.Fatalf("timers_fired = %v", got)
	}
	p := seriesOf(t, all, "timers_pending")
	if !p.Gauge || len(p.Points) != 4 || p.Points[0].V != 5 || p.Points[3].V != 0 || !p.Points[0].At.Equal(t0) {
		t.Fatalf("timers_pending = %+v", p)
	}
	if got := seriesOf(t, all, "stage:writer").Points; len(got) != 3 || got[0].V != 2 || got[2].V != 5 {
		t.Fatalf("stage:writer = %v", got)
	}
	if got := seriesOf(t, all, "stage:late").Points; len(got) != 1 || got[0].V != 4 || !got[0].At.Equal(t0.Add(40*time.Second)) {
		t.Fatalf("stage:late = %v (its first reading is no rate from zero)", got)
	}
}

// TestRingsBounded: the rings never grow past their size: after many
// more readings than they hold, the series cover the last Size readings
// (Size-1 rates) and the ring's backing array is the one made at the start.
func TestRingsBounded(t *testing.T) {
	const size = 361
	r := NewRings(size, 10*time.Second)
	backing := &r.ring[0]
	t0 := time.Unix(1_800_000_000, 0)
	for i := range 5 * size {
		var stages []StageCount
		for s := range MaxStages + 10 { // more names than kept
			stages = append(stages, StageCount{fmt.Sprintf("s%03d", s), uint64(i * s)})
		}
		r.Add(Reading{Sample: Sample{At: t0.Add(time.Duration(i) * 10 * time.Second), MsgsIn: int64(i) * 30}, Stages: stages})
	}
	if len(r.ring) != size || cap(r.ring) != size || &r.ring[0] != backing {
		t.Fatalf("ring grew: len %d cap %d", len(r.ring), cap(r.ring))
	}
	if len(r.stage) != MaxStages {
		t.Fatalf("%d stage rings, want the cap %d", len(r.stage), MaxStages)
	}
	for _, sr := range r.stage {
		if len(sr.v) != size || cap(sr.v) != size {
			t.Fatalf("stage ring of %d", cap(sr.v))
		}
	}
	in := seriesOf(t, r.Series(), "msgs_in")
	if len(in.Points) != size-1 {
		t.Fatalf("%d points, want %d", len(in.Points), size-1)
	}
	last := t0.Add(time.Duration(5*size-1) * 10 * time.Second)
	if !in.Points[len(in.Points)-1].At.Equal(last) || !in.Points[0].At.Equal(last.Add(-time.Duration(size-2)*10*time.Second)) {
		t.Fatalf("points from %v to %v", in.Points[0].At, in.Points[len(in.Points)-1].At)
	}
	for _, p := range in.Points {
		if p.V != 3 {
			t.Fatalf("rate %v, want 3/s", p.V)
		}
	}
	if got := seriesOf(t, r.Series(), "stage:s002").Points; len(got) != size-1 || got[0].V != 0.2 {
		t.Fatalf("stage:s002: %d points, first %v", len(got), got[0])
	}
}

// TestCounterRestart: a counter that went down restarted from zero.
func TestCounterRestart(t *testing.T) {
	r := NewRings(4, time.Second)
	t0 := time.Unix(1_800_000_000, 0)
	r.Add(Reading{Sample: Sample{At: t0, OutPop: 50}})
	r.Add(Reading{Sample: Sample{At: t0.Add(2 * time.Second), OutPop: 8}})
	if got := seriesOf(t, r.Series(), "out_pop").Points; len(got) != 1 || got[0].V != 4 {
		t.Fatalf("out_pop = %v", got)
	}
}

package stats

import (
	"math"
	"testing"
	"time"
)

// newTestSampler returns a sampler driven by hand with a fake clock.
func newTestSampler(c *Counters, clock *time.Time, timer func() (uint64, uint64)) (*Sampler, *View) {
	v := &View{}
	s := &Sampler{opts: Options{Counters: c, View: v, Every: time.Second, Timer: timer, Now: func() time.Time { return *clock }}}
	s.keys = newKeyRings(int(keyWindow/time.Second) + 1)
	return s, v
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestRatesOverWindows(t *testing.T) {
	var c Counters
	clock := time.Date(2026, 3, 1, 12, 0, 0, 0, time.Local)
	var enq, deq uint64
	s, v := newTestSampler(&c, &clock, func() (uint64, uint64) { return enq, deq })
	s.sample()
	// 10 minutes at 5 messages/s on T (2 per pull served to G), then a
	// minute of silence.
	for i := 1; i <= 600; i++ {
		clock = clock.Add(time.Second)
		c.Stored(KindClient, "T", "", 5, 500)
		c.Served("G", "T", 2, 200)
		c.Served("G", "T", 0, 0)
		enq, deq = enq+3, deq+1
		s.sample()
	}
	snap := v.Load()
	for i := range Windows {
		if !near(snap.Put[i], 5) || !near(snap.GetTransferred[i], 2) || !near(snap.GetFound[i], 1) ||
			!near(snap.GetMiss[i], 1) || !near(snap.GetTotal[i], 2) {
			t.Errorf("window %s: %+v", Windows[i], snap)
		}
	}
	if !near(snap.TimerEnqueue, 3) || !near(snap.TimerDequeue, 1) {
		t.Errorf("timer rates %v %v", snap.TimerEnqueue, snap.TimerDequeue)
	}
	if !near(snap.TopicPut["T"], 5) || !near(snap.GroupGet[GroupTopic{"G", "T"}], 2) {
		t.Errorf("per key: %v %v", snap.TopicPut, snap.GroupGet)
	}
	if snap.PutTotal != 3000 || snap.GetTotalMsgs != 1200 || c.PutBytes() != 300000 {
		t.Errorf("totals %d %d %d", snap.PutTotal, snap.GetTotalMsgs, c.PutBytes())
	}
	for i := 0; i < 60; i++ {
		clock = clock.Add(time.Second)
		s.sample()
	}
	snap = v.Load()
	want := Rates{0, 0, 5 * 540.0 / 600}
	for i := range Windows {
		if !near(snap.Put[i], want[i]) {
			t.Errorf("after a silent minute, put over %s = %v, want %v", Windows[i], snap.Put[i], want[i])
		}
	}
	if snap.TopicPut["T"] != 0 || len(s.ring) != 601 {
		t.Errorf("topic rate %v after a silent minute, ring %d", snap.TopicPut["T"], len(s.ring))
	}
}

func TestYoungWindowsUseWhatTheyHave(t *testing.T) {
	var c Counters
	clock := time.Now()
	s, v := newTestSampler(&c, &clock, nil)
	s.sample()
	if got := v.Load().Put; got != (Rates{}) {
		t.Fatalf("one sample: %v", got)
	}
	clock = clock.Add(2 * time.Second)
	c.Stored(KindClient, "T", "", 10, 1)
	c.Stored(KindClient, "U", "", 1, 1) // first seen: counted from 0
	s.sample()
	if got := v.Load(); !near(got.Put[0], 5.5) || !near(got.Put[2], 5.5) || !near(got.TopicPut["U"], 0.5) {
		t.Fatalf("two samples 2 s apart: %+v", got)
	}
}

func TestDayTotals(t *testing.T) {
	var c Counters
	clock := time.Date(2026, 3, 1, 23, 59, 58, 0, time.Local)
	s, v := newTestSampler(&c, &clock, nil)
	step := func(d time.Duration, put int) *Snapshot {
		clock = clock.Add(d)
		c.Stored(KindClient, "T", "", put, 1)
		c.Served("G", "T", put, put)
		s.sample()
		return v.Load()
	}
	step(0, 7)
	if got := step(time.Second, 3); got.PutTodayMorning != 0 || got.PutYesterdayMorning != 0 {
		t.Fatalf("before midnight: %+v", got)
	}
	got := step(2*time.Second, 5) // 00:00:01 the next day
	if got.PutTodayMorning != 15 || got.PutYesterdayMorning != 0 || got.GetTodayMorning != 15 {
		t.Fatalf("after the first midnight: %+v", got)
	}
	got = step(24*time.Hour, 1)
	if got.PutTodayMorning != 16 || got.PutYesterdayMorning != 15 || got.PutTotal != 16 {
		t.Fatalf("after the second midnight: %+v", got)
	}
}

// TestKinds checks that only client sends are messages in, that the
// broker's own records are counted apart by kind, and that every protocol's
// consumption is a message out.
func TestKinds(t *testing.T) {
	var c Counters
	c.Stored(KindClient, "T", "", 3, 30)
	c.Stored(KindClient, "T", "Delay", 2, 20) // a delayed send, counted under its real topic
	c.Stored(KindTimer, "T", "", 2, 20)       // their write-backs
	c.Stored(KindPop, "rmq_sys_pop", "", 5, 50)
	c.Stored(KindClient, "%RETRY%G", "", 1, 10)
	c.Stored(KindRetry, "%RETRY%G", "", 1, 10)
	c.Stored(KindPop, "%DLQ%G", "", 1, 10)
	if c.PutMessages() != 5 || c.PutBytes() != 50 {
		t.Errorf("messages in %d (%d bytes), want 5 (50)", c.PutMessages(), c.PutBytes())
	}
	for k, want := range map[Kind]int64{KindClient: 5, KindTimer: 2, KindPop: 5, KindRetry: 2, KindDLQ: 1, KindSystem: 0} {
		if got, _ := c.Records(k); got != want {
			t.Errorf("records of kind %s = %d, want %d", k, got, want)
		}
	}
	in := map[TopicType]int64{}
	c.EachIn(func(k TopicType, p *Pair) { in[k] = p.Msgs.Load() })
	if len(in) != 2 || in[TopicType{"T", "Normal"}] != 3 || in[TopicType{"T", "Delay"}] != 2 {
		t.Errorf("in by topic and type: %v", in)
	}
	c.Served("G", "T", 2, 20)
	c.Served("G", "T", 0, 0)
	c.Consumed(ViaPop, "G", "T", 3, 30)
	if c.GotMessages() != 5 {
		t.Errorf("messages out %d, want 5", c.GotMessages())
	}
	if m, b := c.Out(ViaPull); m != 2 || b != 20 {
		t.Errorf("pull out %d/%d", m, b)
	}
	if m, b := c.Out(ViaPop); m != 3 || b != 30 {
		t.Errorf("pop out %d/%d", m, b)
	}
	if c.found.Load() != 1 || c.missed.Load() != 1 {
		t.Errorf("pop counted as pulls: found %d missed %d", c.found.Load(), c.missed.Load())
	}
}

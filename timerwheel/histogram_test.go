package timerwheel

import (
	"testing"
	"time"
)

// TestPendingHistogram adds timers at known delays (near and far wheel,
// and one overdue) and checks each lands in its bucket, that the counts
// add up to Stats().Pending, and that cancels and released timers leave.
func TestPendingHistogram(t *testing.T) {
	s := openStore(t, testOptions(t.TempDir()), T0)
	minute, hour, day := int64(time.Minute/time.Millisecond), int64(time.Hour/time.Millisecond), int64(24*time.Hour/time.Millisecond)
	edges := []int64{minute, hour, day, 30 * day}
	var ts []Timer
	id := int64(0)
	add := func(n int, delay int64) {
		for range n {
			id++
			ts = append(ts, timerAt(id, T0+delay))
		}
	}
	add(3, 5_000)     // < 1 min
	add(4, 10*minute) // < 1 h (near wheel)
	add(5, 3*hour)    // < 1 day (far wheel)
	add(6, 7*day)     // < 30 days
	add(2, 200*day)   // beyond the last edge
	mustAdd(t, s, T0, ts...)
	mustAdd(t, s, T0, Timer{Kind: KindCancel, DeliverMs: T0 + 10*minute, CommitLogOffset: 1000, QueueOffset: 1000,
		Size: 100, KeyHash: KeyHash("TopicA", keyOf(5))})
	got := s.PendingHistogram(T0, edges)
	want := []int64{3, 4, 5, 6, 2}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("histogram %v, want %v", got, want)
		}
	}
	var sum int64
	for _, c := range got {
		sum += c
	}
	if p := s.Stats().Pending; sum != p {
		t.Fatalf("histogram adds up to %d, Stats().Pending %d", sum, p)
	}
	// An hour later the first two groups were released: they leave.
	h := newHarness(t, s)
	h.run(T0, T0+hour)
	got = s.PendingHistogram(T0+hour, edges)
	if got[0]+got[1] != 0 || got[2] != 5 || got[3] != 6 || got[4] != 2 {
		t.Fatalf("after an hour: histogram %v", got)
	}
}

// BenchmarkPendingHistogram10M measures the histogram over a wheel whose
// slots hold 10 million pending timers: every near slot and every far
// bucket occupied (the worst case for the scan; the cost does not depend
// on the number of timers, only on occupied slots). The slot counts are
// set directly, so the benchmark does not write 880 MB of TimerLog.
func BenchmarkPendingHistogram10M(b *testing.B) {
	s := openStore(b, testOptions(b.TempDir()), T0)
	fillSlots(s, 10_000_000)
	if p := s.Stats().Pending; p != 10_000_000 {
		b.Fatalf("pending %d", p)
	}
	day := int64(24 * time.Hour / time.Millisecond)
	edges := make([]int64, 0, 365)
	for d := int64(1); d <= 365; d++ {
		edges = append(edges, d*day)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		_ = s.PendingHistogram(T0, edges)
	}
}

// fillSlots marks every near slot ahead of the dequeue position and every
// far bucket after the relink boundary as occupied, total timers in all.
func fillSlots(s *Store, total int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	nearN, farN := int64(len(s.near.slots)), int64(len(s.far.slots))
	per := total / (nearN + farN)
	rest := total - per*(nearN+farN)
	put := func(r *ring, c *counts, no int64, n int64) {
		sl := &r.slots[r.idx(no)]
		*sl = slot{no: no, head: 1, first: 1, n: uint32(n), minCL: noCL}
		r.mark(no)
		setBit(r.occ, r.idx(no))
		c.n += n
	}
	for i := range nearN {
		n := per
		if i == 0 {
			n += rest
		}
		put(&s.near, &s.nearAhead, s.base+i, n)
	}
	f0 := s.relinkedUpTo / s.geo.FarSlotMs
	for i := range farN {
		put(&s.far, &s.farCnt, f0+i, per)
	}
}

// BenchmarkTimerPageQueries10M is what one load of the console's timer
// page asks of a wheel holding 10 million pending timers in every slot:
// the year's 52 weekly bars, the five range totals, the 366 days for the
// largest delays, the next minute's count and the stats.
func BenchmarkTimerPageQueries10M(b *testing.B) {
	s := openStore(b, testOptions(b.TempDir()), T0)
	fillSlots(s, 10_000_000)
	day, week := int64(24*time.Hour/time.Millisecond), int64(7*24*time.Hour/time.Millisecond)
	var bars, days []int64
	for w := int64(1); w <= 52; w++ {
		bars = append(bars, w*week)
	}
	for d := int64(1); d <= 366; d++ {
		days = append(days, d*day)
	}
	totals := []int64{60_000, 3_600_000, day, 30 * day, 365 * day}
	b.ReportAllocs()
	for b.Loop() {
		_ = s.PendingHistogram(T0, bars)
		_ = s.PendingHistogram(T0, totals)
		_ = s.PendingHistogram(T0, days)
		_ = s.DueWithin(T0, 60_000)
		_ = s.Stats()
	}
}

// TestPendingHistogramExactInFarBuckets plants timers at known offsets in
// the far wheel (10 min buckets) and reads the console's "next hour" chart
// edges (one a minute): each timer lands in its own minute, not at the
// start of its far bucket (a timer due in 19 min 40 s was drawn in the
// 10-minute column), and a bucket within one minute still counts whole.
func TestPendingHistogramExactInFarBuckets(t *testing.T) {
	for _, start := range []int64{T0, T0 + 7*60_000 + 13_000} { // bucket-aligned or not
		s := openStore(t, testOptions(t.TempDir()), start)
		min := int64(time.Minute / time.Millisecond)
		var edges []int64
		for i := int64(1); i <= 60; i++ {
			edges = append(edges, i*min)
		}
		offsets := []int64{19*min + 40_000, 25*min + 5_000, 25*min + 50_000, 47*min + 59_000, 59*min + 59_999, 3 * 60 * min}
		var ts []Timer
		for i, off := range offsets {
			ts = append(ts, timerAt(int64(i+1), start+off))
		}
		mustAdd(t, s, start, ts...)
		got := s.PendingHistogram(start, edges)
		want := make([]int64, len(edges)+1)
		for _, off := range offsets {
			want[min64(off/min, int64(len(edges)))]++
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("start %d: bucket %d holds %d, want %d (histogram %v)", start, i, got[i], want[i], got)
			}
		}
		if far := s.Stats().Pending; far != int64(len(offsets)) {
			t.Fatalf("pending %d", far)
		}
	}
}

func min64(a, b int64) int64 {
	if a < b {
		return a
	}
	return b
}

package timerwheel

import (
	"slices"
	"testing"
)

// pendingIDs pages through Pending with page size n and returns the
// CommitLog offsets listed, in order, with the number of pages.
func pendingIDs(t *testing.T, s *Store, n int) ([]int64, int) {
	t.Helper()
	var ids []int64
	c, pages := FirstCursor, 0
	for more := true; more; {
		ts, next, m, err := s.Pending(c, n)
		if err != nil {
			t.Fatal(err)
		}
		if len(ts) > n {
			t.Fatalf("page of %d holds %d", n, len(ts))
		}
		for _, tm := range ts {
			ids = append(ids, tm.CommitLogOffset)
		}
		c, more = next, m
		pages++
		if pages > 1000 {
			t.Fatal("paging does not end")
		}
	}
	return ids, pages
}

// TestPendingLists plants timers near and far, cancels one, fires some and
// checks that paging lists exactly the others, in due order, none twice.
func TestPendingLists(t *testing.T) {
	s := openStore(t, testOptions(t.TempDir()), T0)
	h := newHarness(t, s)
	var want []int64
	var add []Timer
	// ids 1..40: due every 30 s from T0+5 s (near and far wheel); 41..45
	// due in 2..6 days (far buckets); id 7 is cancelled.
	for id := int64(1); id <= 40; id++ {
		add = append(add, timerNQ(id, T0+5_000+(id-1)*30_000))
	}
	for id := int64(41); id <= 45; id++ {
		add = append(add, timerNQ(id, T0+(id-39)*24*3600*1000))
	}
	mustAdd(t, s, T0, add...)
	mustAdd(t, s, T0+1, cancelOf(100, 7, T0+5_000+6*30_000), cancelOf(101, 43, T0+4*24*3600*1000+300)) // 43: far, in the window

	// Before anything fires every timer but the cancelled one is listed.
	for id := int64(1); id <= 45; id++ {
		if id != 7 && id != 43 {
			want = append(want, id)
		}
	}
	for _, n := range []int{1, 3, 7, 100} {
		got, pages := pendingIDs(t, s, n)
		if !slices.Equal(got, want) {
			t.Fatalf("page size %d: listed %v, want %v", n, got, want)
		}
		if n == 7 && pages != 7 { // 43 timers: 6 full pages and one of 1
			t.Fatalf("page size 7: %d pages", pages)
		}
	}
	// Fire the first 10 (due up to T0+275 s): they are no longer listed.
	h.run(T0, T0+280_000)
	if d := h.delivered(); len(d) != 9 { // 1..10 without 7
		t.Fatalf("delivered %v", d)
	}
	got, _ := pendingIDs(t, s, 4)
	if !slices.Equal(got, want[9:]) {
		t.Fatalf("after firing: listed %v, want %v", got, want[9:])
	}
	// A page's cursor stays valid while timers fire between pages.
	ts, next, more, err := s.Pending(FirstCursor, 5)
	if err != nil || !more || len(ts) != 5 || ts[0].CommitLogOffset != 11 {
		t.Fatalf("first page: %v %v %v", ts, more, err)
	}
	h.run(T0+280_000, T0+400_000) // fires 11..14
	ts, _, _, err = s.Pending(next, 3)
	if err != nil || len(ts) != 3 || ts[0].CommitLogOffset != 16 {
		t.Fatalf("page after the cursor: %v %v", ts, err)
	}
	for _, tm := range ts {
		if tm.DeliverMs <= T0+400_000 || tm.EffMs < tm.DeliverMs {
			t.Fatalf("listed %+v", tm)
		}
	}
}

// BenchmarkPendingScan pages through 1M pending timers spread over 30 days
// (near wheel and far buckets), 4096 a page, as a full TimerCounts does.
func BenchmarkPendingScan(b *testing.B) {
	s := openStore(b, Options{Dir: b.TempDir(), NoSync: true}, T0) // default 4 MiB segments
	const n = 1_000_000
	batch := make([]Timer, 0, 10_000)
	for id := int64(1); id <= n; id++ {
		batch = append(batch, timerAt(id, T0+1000+(id*2_591_999)%(30*24*3600*1000)))
		if len(batch) == cap(batch) {
			mustAdd(b, s, T0, batch...)
			batch = batch[:0]
		}
	}
	if err := s.Flush(); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		c, total := FirstCursor, 0
		for more := true; more; {
			ts, next, m, err := s.Pending(c, 4096)
			if err != nil {
				b.Fatal(err)
			}
			total += len(ts)
			c, more = next, m
		}
		if total != n {
			b.Fatalf("listed %d of %d", total, n)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/timer")
}

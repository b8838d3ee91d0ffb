package commitlog

import (
	"testing"
	"time"
)

// TestSyncObserverAndSegmentCount: only a Sync that fsyncs data is
// observed; segments are counted as they roll.
func TestSyncObserverAndSegmentCount(t *testing.T) {
	c := mustOpen(t, t.TempDir(), Options{SegmentSize: 1024})
	var observed []time.Duration
	c.SetSyncObserver(func(d time.Duration) { observed = append(observed, d) })
	if err := c.Sync(); err != nil {
		t.Fatal(err)
	}
	if len(observed) != 0 || c.SegmentCount() != 1 {
		t.Fatalf("empty sync observed %v, segments %d", observed, c.SegmentCount())
	}
	mustAppend(t, c, makeRecords(0, 400, 400, 400)) // the third record rolls into a second segment
	if err := c.Sync(); err != nil {
		t.Fatal(err)
	}
	if len(observed) != 1 || observed[0] < 0 || c.SegmentCount() != 2 {
		t.Fatalf("observed %v, segments %d; want one observation and 2 segments", observed, c.SegmentCount())
	}
	c.SetSyncObserver(nil)
	mustAppend(t, c, makeRecords(3, 100))
	if err := c.Sync(); err != nil || len(observed) != 1 {
		t.Fatalf("observer removed but called: %v %v", observed, err)
	}
}

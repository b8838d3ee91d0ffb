package timer

import (
	"testing"

	"github.com/wheelmq/wheelmq/storage"
	"github.com/wheelmq/wheelmq/timerwheel"
)

// TestLostEntryIsACorrection: a wheel entry dropped when it came due
// because its message is not in the CommitLog counts as a correction
// (storage.FixTimerEntry) when it names an offset at or past the log's end
// at open (the log lost its tail); one inside the log (damage, a bad
// message) does not, nor a drop for another reason.
func TestLostEntryIsACorrection(t *testing.T) {
	st, err := storage.Open(t.TempDir(), storage.Options{SegmentSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	st.OpenedEnd = 1000
	svc := &Service{opts: Options{Store: st}}
	for _, c := range []struct {
		off    int64
		reason string
		lost   bool
	}{
		{1000, "unreadable", true},
		{4096, "stale", true},
		{999, "unreadable", false},
		{10, "stale", false},
		{2000, "undecodable", false},
		{2000, "no_real_topic", false},
	} {
		before := st.Corrections.Count(storage.FixTimerEntry)
		svc.lostEntry(timerwheel.Timer{CommitLogOffset: c.off, DeliverMs: 5000}, c.reason)
		if got := st.Corrections.Count(storage.FixTimerEntry) - before; got != map[bool]int64{true: 1}[c.lost] {
			t.Errorf("offset %d %s: %d corrections, want lost=%v", c.off, c.reason, got, c.lost)
		}
	}
	p := st.Corrections.Pending()
	if len(p) != 1 || p[0].Count != 2 || p[0].Last.From != 4096 || p[0].Last.To != -1 {
		t.Fatalf("pending %+v", p)
	}
}

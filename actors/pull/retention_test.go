package pull

import (
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/storage"
)

// TestPullAfterRetention deletes the CommitLog's first segments: pulls and
// searches by time answer from what is kept, both in the moment before the
// consume queue is trimmed and after.
func TestPullAfterRetention(t *testing.T) {
	r := newRig(t, storage.Options{SegmentSize: 1024})
	for i := 0; i < 40; i++ {
		r.put(t, "T", 0, "a", int64(1000+i))
	}
	r.start(t, 0)
	cl := r.st.CommitLog
	for i := 0; i < 3; i++ {
		if _, ok, err := cl.DeleteOldest(1 << 40); !ok || err != nil {
			t.Fatalf("DeleteOldest: %v %v", ok, err)
		}
	}
	q := r.st.Queues.Lookup("T", 0)
	kept, err := q.SearchByPhysOffset(cl.MinOffset())
	if err != nil || kept == 0 {
		t.Fatalf("first kept offset %d %v", kept, err)
	}
	check := func(stage string) {
		t.Helper()
		for _, off := range []int64{0, kept - 1} {
			resp := r.pull(t, request("T", 0, off, 8, "*"))
			if resp.Outcome != OffsetMoved || resp.Remark != "OFFSET_TOO_SMALL" ||
				resp.Next != kept {
				t.Fatalf("%s: pull at %d: code %d %q next %d", stage, off, resp.Outcome, resp.Remark, resp.Next)
			}
		}
		resp := r.pull(t, request("T", 0, kept, 8, "*"))
		if resp.Outcome != Found {
			t.Fatalf("%s: pull at the first kept offset: code %d %q", stage, resp.Outcome, resp.Remark)
		}
		ch := make(chan int64, 1)
		r.p.Send(&SearchByTime{Topic: "T", QueueID: 0, Timestamp: 0, Reply: func(off int64) { ch <- off }})
		select {
		case got := <-ch:
			if got != kept {
				t.Fatalf("%s: search by time 0 = %d, want %d", stage, got, kept)
			}
		case <-time.After(wait):
			t.Fatalf("%s: search by time not answered", stage)
		}
	}
	check("before the trim")
	if _, err := r.st.Queues.TrimBelow(cl.MinOffset()); err != nil {
		t.Fatal(err)
	}
	if q.MinOffset() != kept {
		t.Fatalf("trimmed min %d, want %d", q.MinOffset(), kept)
	}
	check("after the trim")
}

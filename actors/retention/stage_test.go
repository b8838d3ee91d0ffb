package retention

import (
	"bytes"
	"math"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/dispatch"
	"github.com/wheelmq/wheelmq/actors/stage"
	"github.com/wheelmq/wheelmq/actors/supervisor"
	"github.com/wheelmq/wheelmq/storage"
	"github.com/wheelmq/wheelmq/storage/commitlog"
	"github.com/wheelmq/wheelmq/storage/consumequeue"
	"github.com/wheelmq/wheelmq/storage/message"
)

// fillSegments opens a store with small segments and appends records until
// it has n segments.
func fillSegments(t *testing.T, n int) *storage.Store {
	t.Helper()
	st, err := storage.Open(t.TempDir(), storage.Options{SegmentSize: 4096})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	for i := int64(0); len(st.CommitLog.Segments()) < n; i++ {
		rec := &message.Record{Topic: "t", QueueOffset: i, Body: bytes.Repeat([]byte("x"), 900),
			BornTimestamp: time.Now().UnixMilli(), StoreTimestamp: time.Now().UnixMilli()}
		b, err := rec.Encode(nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.CommitLog.Append([][]byte{b}); err != nil {
			t.Fatal(err)
		}
	}
	return st
}

// TestPinsReadAgainRightBeforeDeletion: a pin that moves below a segment
// between the round's decision and the segment's deletion (while the
// dispatcher trims) cancels that deletion. The Fault hook, which runs right
// before each deletion, moves the pin.
func TestPinsReadAgainRightBeforeDeletion(t *testing.T) {
	tests := []struct {
		name string
		// move is called before the deletion numbered call (1, 2, ...) and
		// returns where the pin goes (math.MaxInt64: it stays).
		move        func(call int, segs []commitlog.SegmentInfo) int64
		wantDeleted int
	}{
		{"pin stays", func(int, []commitlog.SegmentInfo) int64 { return math.MaxInt64 }, 3},
		{"pin drops into the first segment", func(call int, segs []commitlog.SegmentInfo) int64 {
			if call == 1 {
				return segs[0].Base + 10
			}
			return math.MaxInt64
		}, 0},
		{"pin drops into the second segment after the first went", func(call int, segs []commitlog.SegmentInfo) int64 {
			if call == 2 {
				return segs[1].Base + 10
			}
			return math.MaxInt64
		}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := fillSegments(t, 4)
			segs := st.CommitLog.Segments()
			var pin atomic.Int64
			pin.Store(math.MaxInt64)
			calls := 0
			sys := stage.NewSystem(zerolog.Nop())
			t.Cleanup(sys.Shutdown)
			reg := stage.NewRegistry(prometheus.NewRegistry())
			strat := supervisor.New(supervisor.Policy{Initial: time.Millisecond, Max: 2 * time.Millisecond})
			s, err := reg.Spawn(sys, strat, StageName, Producer(Options{
				Store: st,
				Policy: Policy{Retention: time.Millisecond, Schedule: Schedule{any: true}, CleanRatio: 0.75,
					ForceRatio: 0.85, MaxPerRound: 10},
				FullRatio: 0.9,
				Pins:      []Pin{{Name: "moving", Offset: pin.Load}},
				Trim: func(tr *dispatch.Trim) {
					tr.Reply(consumequeue.StoreTrim{}, nil) // the dispatcher's answer, at once
				},
				DiskUsage:      func() (float64, error) { return 0.1, nil },
				Now:            func() time.Time { return time.Now().Add(time.Hour) }, // every segment expired
				Interval:       time.Hour,
				SampleInterval: time.Hour,
				DeleteInterval: -1,
				Fault: func() {
					calls++
					if at := tt.move(calls, segs); at != math.MaxInt64 {
						pin.Store(at)
					}
				},
				Logger: zerolog.New(zerolog.NewTestWriter(t)),
			}))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(s.Stop)
			reports := make(chan Report, 1)
			s.Send(&RunNow{Reply: func(r Report) { reports <- r }})
			var rep Report
			select {
			case rep = <-reports:
			case <-time.After(10 * time.Second):
				t.Fatal("no report")
			}
			if rep.Err != nil {
				t.Fatalf("round failed: %v", rep.Err)
			}
			if rep.Deleted != tt.wantDeleted {
				t.Fatalf("deleted %d segments, want %d (report %+v)", rep.Deleted, tt.wantDeleted, rep)
			}
			left := st.CommitLog.Segments()
			if len(left) != len(segs)-tt.wantDeleted {
				t.Fatalf("%d segments left, want %d", len(left), len(segs)-tt.wantDeleted)
			}
			for _, seg := range segs[tt.wantDeleted:] {
				if _, err := os.Stat(seg.Path); err != nil {
					t.Fatalf("segment at %d that a pin held: %v", seg.Base, err)
				}
			}
			if tt.wantDeleted < len(segs)-1 && rep.HeldBy != "moving" {
				t.Fatalf("report names %q as the holder, want the pin that moved", rep.HeldBy)
			}
		})
	}
}

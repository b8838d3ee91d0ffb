package pop

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/pull"
	"github.com/wheelmq/wheelmq/storage"
	"github.com/wheelmq/wheelmq/storage/consumequeue"
	"github.com/wheelmq/wheelmq/storage/corruption"
	"github.com/wheelmq/wheelmq/storage/message"
)

// TestPopOverDamage pops a queue whose third message fails its checksum:
// under on-corruption=skip it is passed over (counted as acked, reported
// once) like a pull passes it; under stop the pop ends before it and
// nothing at or past it is acked or delivered, pop after pop (the pull
// readers' rule, pull.Unreadable).
func TestPopOverDamage(t *testing.T) {
	for _, tc := range []struct {
		policy    corruption.Policy
		delivered []int64
		next      int64
	}{
		{corruption.PolicySkip, []int64{0, 1, 3, 4}, 5},
		{corruption.PolicyStop, []int64{0, 1}, 2},
	} {
		t.Run(tc.policy.String(), func(t *testing.T) {
			st, err := storage.Open(t.TempDir(), storage.Options{OnCorruption: tc.policy,
				Corruption: corruption.NewMetrics(prometheus.NewRegistry())})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			q, err := st.Queues.Queue("T", 0)
			if err != nil {
				t.Fatal(err)
			}
			var units []consumequeue.Unit
			for i := range 5 {
				b, err := (&message.Record{Topic: "T", QueueOffset: int64(i), Body: fmt.Appendf(nil, "body-%d", i)}).Encode(nil)
				if err != nil {
					t.Fatal(err)
				}
				offs, err := st.CommitLog.Append([][]byte{b})
				if err != nil {
					t.Fatal(err)
				}
				u := consumequeue.Unit{Offset: offs[0], Size: int32(len(b)), TagsCode: message.TagsHashCode("")}
				if err := q.Append(u); err != nil {
					t.Fatal(err)
				}
				units = append(units, u)
			}
			if err := st.CommitLog.Sync(); err != nil {
				t.Fatal(err)
			}
			flip(t, filepath.Join(st.CommitLog.Dir(), fmt.Sprintf("%020d", 0)), units[2].Offset+int64(units[2].Size)-6)

			e := New(Options{Store: st, Logger: zerolog.Nop()})
			k := qkey{"G", "T", 0}
			s := newQState(0)
			e.queues[k] = s
			pop := func() *Result {
				return e.collect(&Pop{Group: "G", Topic: "T", QueueID: 0, MaxNums: 32, InvisibleMs: 60_000,
					Filter: pull.Filter{All: true}}, []int32{0})
			}
			res := pop()
			var got []int64
			for off := range s.inflight {
				got = append(got, off)
			}
			if res.Count != len(tc.delivered) || len(got) != len(tc.delivered) {
				t.Fatalf("delivered %d (in flight %v), want offsets %v", res.Count, got, tc.delivered)
			}
			for _, off := range tc.delivered {
				if _, ok := s.inflight[off]; !ok {
					t.Fatalf("offset %d not in flight (in flight %v), want %v", off, got, tc.delivered)
				}
			}
			if s.next != tc.next {
				t.Fatalf("next %d, want %d", s.next, tc.next)
			}
			_, acked := s.acked[2]
			if tc.policy == corruption.PolicyStop && (acked || s.committed > 2) {
				t.Fatalf("on-corruption=stop acked the damaged offset (acked %v, committed %d)", acked, s.committed)
			}
			if tc.policy == corruption.PolicySkip && !acked {
				t.Fatal("on-corruption=skip did not count the damaged offset as done")
			}
			if again := pop(); again.Count != 0 || s.next != tc.next {
				t.Fatalf("a second pop delivered %d, next %d; want 0, %d", again.Count, s.next, tc.next)
			}
			if n := e.Modes().InFlight("G", "T"); n != int64(len(tc.delivered)) {
				t.Fatalf("mode table counts %d in flight, want %d", n, len(tc.delivered))
			}
		})
	}
}

// flip inverts one byte of a file in place.
func flip(t *testing.T, path string, pos int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, pos); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x5a
	if _, err := f.WriteAt(b, pos); err != nil {
		t.Fatal(err)
	}
}

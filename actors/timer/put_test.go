package timer

import (
	"slices"
	"testing"

	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/writer"
	"github.com/wheelmq/wheelmq/storage"
)

// TestDequeuePutStartsInReleaseOrder hands dequeue_put batches in the
// orders two or more dequeue_message workers can produce: it writes them
// back in release order, each once, as soon as the batches before it are
// there; a new epoch forgets the batches of the old one that wait.
func TestDequeuePutStartsInReleaseOrder(t *testing.T) {
	type arrival struct {
		epoch, seq uint64
	}
	for _, tc := range []struct {
		name     string
		arrivals []arrival
		want     []string // batches written back, in order ("epoch/seq")
	}{
		{"in order", []arrival{{0, 0}, {0, 1}, {0, 2}}, []string{"0/0", "0/1", "0/2"}},
		{"reversed", []arrival{{0, 3}, {0, 2}, {0, 1}, {0, 0}}, []string{"0/0", "0/1", "0/2", "0/3"}},
		{"pairs swapped", []arrival{{0, 1}, {0, 0}, {0, 3}, {0, 2}}, []string{"0/0", "0/1", "0/2", "0/3"}},
		{"a gap holds the rest", []arrival{{0, 0}, {0, 2}, {0, 3}}, []string{"0/0"}},
		{"new epoch drops the waiting", []arrival{{0, 0}, {0, 2}, {1, 1}, {1, 0}, {1, 2}},
			[]string{"0/0", "1/0", "1/1", "1/2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, err := storage.Open(t.TempDir(), storage.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = st.Close() })
			var got []string
			svc := &Service{opts: Options{Store: st, Metrics: NewMetrics(nil), Logger: zerolog.Nop(),
				Append: func(a *writer.Append) { got = append(got, string(a.Records[0])) }}}
			d := &dequeuePut{svc: svc}
			for _, a := range tc.arrivals {
				name := string(rune('0'+a.epoch)) + "/" + string(rune('0'+a.seq))
				d.inOrder(&putBatch{epoch: a.epoch, seq: a.seq, puts: []put{{
					key: writer.QueueKey{Topic: "orders"}, record: []byte(name)}}})
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("written back %v, want %v", got, tc.want)
			}
			if len(d.queue) != len(tc.want) {
				t.Fatalf("%d batches pending their writer answers, want %d", len(d.queue), len(tc.want))
			}
		})
	}
}

package storage_test

import (
	"net/netip"
	"testing"

	"github.com/wheelmq/wheelmq/storage"
	"github.com/wheelmq/wheelmq/storage/consumequeue"
	"github.com/wheelmq/wheelmq/storage/message"
)

// TestReadUnitsCoalescesRuns reads units that are partly adjacent in the
// CommitLog, partly not, plus one that does not exist.
func TestReadUnitsCoalescesRuns(t *testing.T) {
	st, err := storage.Open(t.TempDir(), storage.Options{SegmentSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	host := netip.MustParseAddrPort("10.0.0.1:1")
	var all []consumequeue.Unit
	for i := 0; i < 10; i++ {
		rec, err := (&message.Record{BornHost: host, StoreHost: host, Topic: "T", Body: []byte{byte('a' + i)}}).Encode(nil)
		if err != nil {
			t.Fatal(err)
		}
		offs, err := st.CommitLog.Append([][]byte{rec})
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, consumequeue.Unit{Offset: offs[0], Size: int32(len(rec))})
	}
	units := []consumequeue.Unit{all[0], all[1], all[2], all[5], all[7], all[8], all[9],
		{Offset: 1 << 30, Size: all[0].Size}}
	got := storage.ReadUnits(st.CommitLog, units)
	for i, u := range units[:len(units)-1] {
		body, err := message.PeekBody(got[i])
		if err != nil {
			t.Fatalf("unit %d: %v", i, err)
		}
		want, _ := st.CommitLog.ReadAt(u.Offset, u.Size)
		wantBody, _ := message.PeekBody(want)
		if string(body) != string(wantBody) {
			t.Fatalf("unit %d: body %q, want %q", i, body, wantBody)
		}
	}
	if got[len(got)-1] != nil {
		t.Fatal("a unit past the end read as a record")
	}
	// Any order: out[i] still belongs to units[i].
	rev := []consumequeue.Unit{all[9], all[3], all[8], all[2], all[1], all[0]}
	for i, r := range storage.ReadUnits(st.CommitLog, rev) {
		want, _ := st.CommitLog.ReadAt(rev[i].Offset, rev[i].Size)
		if string(r) != string(want) {
			t.Fatalf("reversed unit %d read the wrong record", i)
		}
	}
}

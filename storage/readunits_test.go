package storage_test

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/wheelmq/wheelmq/storage"
	"github.com/wheelmq/wheelmq/storage/consumequeue"
	"github.com/wheelmq/wheelmq/storage/message"
)

// storeWithRecords opens a store on a temporary directory and appends n
// records to its CommitLog, record i with body(i); it returns the store
// (closed at the end of the test), the units and the encoded records.
func storeWithRecords(t *testing.T, n int, body func(i int) []byte) (*storage.Store, []consumequeue.Unit, [][]byte) {
	t.Helper()
	st, err := storage.Open(t.TempDir(), storage.Options{SegmentSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	host := netip.MustParseAddrPort("10.0.0.1:1")
	var units []consumequeue.Unit
	var recs [][]byte
	for i := 0; i < n; i++ {
		rec, err := (&message.Record{BornHost: host, StoreHost: host, Topic: "T", Body: body(i)}).Encode(nil)
		if err != nil {
			t.Fatal(err)
		}
		offs, err := st.CommitLog.Append([][]byte{rec})
		if err != nil {
			t.Fatal(err)
		}
		units = append(units, consumequeue.Unit{Offset: offs[0], Size: int32(len(rec))})
		recs = append(recs, rec)
	}
	return st, units, recs
}

// oneLetter is the body of record i in the tests that need short ones.
func oneLetter(i int) []byte { return []byte{byte('a' + i)} }

// TestReadUnitsCoalescesRuns reads units that are partly adjacent in the
// CommitLog, partly not, plus one that does not exist.
func TestReadUnitsCoalescesRuns(t *testing.T) {
	st, all, _ := storeWithRecords(t, 10, oneLetter)
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

// TestAppendRecordsReadsRunsIntoTheBody reads runs of adjacent and lone
// records into one buffer, stops at a unit that does not match its record,
// and allocates nothing when the buffer has room.
func TestAppendRecordsReadsRunsIntoTheBody(t *testing.T) {
	st, all, recs := storeWithRecords(t, 10, oneLetter)
	units := []consumequeue.Unit{all[0], all[1], all[2], all[5], all[7], all[8], all[9]}
	var want []byte
	size := 0
	for _, i := range []int{0, 1, 2, 5, 7, 8, 9} {
		want = append(want, recs[i]...)
		size += len(recs[i]) + 4
	}
	body := make([]byte, 0, size)
	got, n := storage.AppendRecords(st.CommitLog, body, units)
	if n != len(units) || string(got) != string(want) {
		t.Fatalf("%d of %d units, %d bytes (want %d)", n, len(units), len(got), len(want))
	}
	if allocs := testing.AllocsPerRun(20, func() { storage.AppendRecords(st.CommitLog, body, units) }); allocs != 0 {
		t.Errorf("%v allocations with room in the body", allocs)
	}
	// A unit whose size is not its record's: the run stops before it.
	bad := append([]consumequeue.Unit(nil), units...)
	bad[4].Size++ // all[7]
	got, n = storage.AppendRecords(st.CommitLog, nil, bad)
	if n != 4 || string(got) != string(want[:len(recs[0])*4]) {
		t.Fatalf("with a bad unit: %d units, %d bytes", n, len(got))
	}
	// Two units swapped in size inside one run: caught too.
	swapped := []consumequeue.Unit{all[0], all[1]}
	swapped[0].Size, swapped[1].Size = swapped[1].Size+1, swapped[0].Size-1
	if _, n := storage.AppendRecords(st.CommitLog, nil, swapped); n != 0 {
		t.Fatalf("swapped sizes: %d units read", n)
	}
}

// TestUnitReaderReusesBuffers reads batches of different sizes and orders
// through one UnitReader: each call returns the records of its own units,
// adjacent or not, whatever the earlier calls read.
func TestUnitReaderReusesBuffers(t *testing.T) {
	st, all, _ := storeWithRecords(t, 40, func(i int) []byte {
		return []byte(strings.Repeat(string(rune('a'+i%26)), 1+i))
	})
	var r storage.UnitReader
	for _, tc := range []struct {
		name string
		idx  []int
	}{
		{"large, adjacent", []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19}},
		{"small, scattered, reversed", []int{39, 30, 21, 3}},
		{"medium, mixed", []int{5, 6, 7, 20, 35, 36, 1}},
		{"one", []int{38}},
	} {
		units := make([]consumequeue.Unit, len(tc.idx))
		for i, x := range tc.idx {
			units[i] = all[x]
		}
		got := r.Read(st.CommitLog, units)
		if len(got) != len(units) {
			t.Fatalf("%s: %d records for %d units", tc.name, len(got), len(units))
		}
		for i, u := range units {
			want, err := st.CommitLog.ReadAt(u.Offset, u.Size)
			if err != nil {
				t.Fatal(err)
			}
			if string(got[i]) != string(want) {
				t.Fatalf("%s: unit %d (record %d) read the wrong bytes", tc.name, i, tc.idx[i])
			}
		}
	}
}

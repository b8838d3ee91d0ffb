package pop

import (
	"testing"

	"github.com/wheelmq/wheelmq/storage/message"
)

func groupRec(t *testing.T, g string) []byte {
	t.Helper()
	props := map[string]string{}
	if g != "" {
		props[message.PropShardingKey] = g
	}
	b, err := (&message.Record{Topic: "T", Body: []byte("x"), Properties: message.EncodeProperties(props)}).Encode(nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestFIFOAdmit walks fifoState through holds, passes over, releases,
// replayed (unknown) entries and the bound on passed-over offsets.
func TestFIFOAdmit(t *testing.T) {
	a, b, none := groupRec(t, "A"), groupRec(t, "B"), groupRec(t, "")
	f := newFIFO()
	step := func(off int64, rec []byte, wantOK, wantStop bool) {
		t.Helper()
		if ok, stop := f.admit(off, rec); ok != wantOK || stop != wantStop {
			t.Fatalf("admit(%d) = %v, %v; want %v, %v (waiting %+v busy %v)", off, ok, stop, wantOK, wantStop, f.waiting, f.busy)
		}
	}
	step(0, a, true, false)    // A free
	step(1, b, true, false)    // B free
	step(2, a, false, false)   // A busy: passed over
	step(3, none, true, false) // the "" group is a group of its own
	step(0, a, true, false)    // A's head again (a redelivery)
	if f.waitingLen() != 1 {
		t.Fatalf("waiting %+v", f.waiting)
	}
	var offered []int64
	f.eachWaiting(func(off int64) bool { offered = append(offered, off); return true })
	if len(offered) != 0 {
		t.Fatalf("offered %v while A is busy", offered)
	}
	f.done(0) // A0 acked
	f.eachWaiting(func(off int64) bool { offered = append(offered, off); return true })
	if len(offered) != 1 || offered[0] != 2 {
		t.Fatalf("offered %v, want [2]", offered)
	}
	step(4, a, false, false) // A's later message waits behind offset 2 even though A is free
	step(2, a, true, false)
	step(4, a, false, false) // A busy with 2
	f.done(2)
	step(4, a, true, false)
	if f.waitingLen() != 0 || len(f.waitN) != 0 {
		t.Fatalf("waiting %+v waitN %v", f.waiting, f.waitN)
	}

	// After a restart: entries whose group is unknown hold back new
	// offsets until they are read.
	f = newFIFO()
	f.waiting = []waitEntry{{off: 10}, {off: 11}}
	f.unknown = 2
	step(12, b, false, false) // unknown entries first
	step(11, b, false, false) // 11 is B, but 10 is not read yet
	step(10, a, true, false)
	step(11, b, true, false)
	step(12, b, false, false) // B busy with 11
	if f.unknown != 0 || f.waitingLen() != 1 {
		t.Fatalf("unknown %d waiting %+v", f.unknown, f.waiting)
	}

	// The bound: past fifoMaxWaiting, a busy group's offset stops the scan
	// and a free group's still goes.
	f = newFIFO()
	step(0, a, true, false)
	for off := int64(1); off <= fifoMaxWaiting; off++ {
		step(off, a, false, false)
	}
	step(fifoMaxWaiting+1, a, false, true)
	step(fifoMaxWaiting+1, b, true, false)
	var nilF *fifoState
	if ok, _ := nilF.admit(1, a); !ok || nilF.waitingLen() != 0 {
		t.Fatal("a nil fifoState admits everything")
	}
	nilF.done(1)
}

// TestJournalFIFOField round-trips a FIFO entry's message group.
func TestJournalFIFOField(t *testing.T) {
	for _, g := range []string{"", "A", "group with spaces", "ü/+=,"} {
		en := entry{kind: 'P', key: qkey{"cg", "T", 1}, off: 7, popTime: 1, invisible: 2, attempt: 3, fifo: true, group: g}
		b, err := en.encode()
		if err != nil {
			t.Fatal(err)
		}
		body, err := message.PeekBody(b)
		if err != nil {
			t.Fatal(err)
		}
		back, err := parseEntry(body)
		if err != nil || back != en {
			t.Fatalf("%q: %+v %v, want %+v", body, back, err, en)
		}
	}
	if _, err := parseEntry([]byte("v1 P cg T 1 7 1 2 3 x:Zm9v")); err == nil {
		t.Fatal("a bad tenth field was taken")
	}
}

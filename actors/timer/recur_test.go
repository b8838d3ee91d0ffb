package timer

import (
	"encoding/binary"
	"encoding/hex"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/actors/timer/schedule"
	"github.com/wheelmq/wheelmq/storage/message"
	"github.com/wheelmq/wheelmq/timerwheel"
)

// A recurring timer's fire rebuilds into two write-backs: the fire (real
// topic, its own UNIQ_KEY, seq and fire time, the schedule's properties)
// and the next-fire record (timer topic, next due, seq + 1), each with an
// identity the replay scan recognises and both cancelled by the fire's
// cancel identity.
func TestRebuildRecurringFire(t *testing.T) {
	host := netip.MustParseAddrPort("10.0.0.1:10911")
	props := map[string]string{
		message.PropRealTopic: "orders", message.PropRealQueueID: "1", message.PropTimerOutMS: "5000",
		message.PropUniqKey: "U1", message.PropTags: "A", "app": "x", schedule.Prop: "@every 2s", schedule.PropSeq: "3",
		schedule.PropPrevMs: "3000", "TIMER_ROLL_TIMES": "1",
	}
	st, off, size := storeWithRecord(t, &message.Record{BornHost: host, StoreHost: host, StoreTimestamp: 12,
		Body: []byte("payload"), Topic: RollTopic, Properties: message.EncodeProperties(props)})
	raw, err := st.CommitLog.ReadAt(off, size)
	if err != nil {
		t.Fatal(err)
	}
	p, reason := rebuild(raw, timerwheel.Timer{DeliverMs: 5000, CommitLogOffset: off, Size: size, AddedMs: 100}, 6000)
	if reason != "" || p.next == nil {
		t.Fatalf("rebuild: %q, next %v", reason, p.next)
	}
	fireID := FireUniqKey("U1", 3, 5000)
	if p.key.Topic != "orders" || p.identity() != fireID+"@5000" || p.cancelKey() != "U1@5000" {
		t.Fatalf("fire put %+v (identity %s, cancel %s)", p, p.identity(), p.cancelKey())
	}
	r, _, err := message.Decode(p.record)
	if err != nil {
		t.Fatal(err)
	}
	got := message.DecodeProperties(r.Properties)
	if got[message.PropUniqKey] != fireID || got[schedule.PropSeq] != "3" || got[schedule.PropFireMs] != "5000" ||
		got[schedule.PropOrigin] != "U1" || got["app"] != "x" || got[message.PropTags] != "A" || string(r.Body) != "payload" {
		t.Fatalf("fire properties %v", got)
	}
	if _, ok := got[schedule.PropPrevMs]; ok {
		t.Fatal("the fire carries the next-fire mark")
	}
	// A fire names its schedule, but is none: sent again (a retry through
	// send-back, a forward), it is an ordinary message.
	if _, ok := got[schedule.Prop]; ok || got[schedule.PropOf] != "@every 2s" {
		t.Fatalf("fire: %s %q, %s %q; want only the latter, the schedule's text", schedule.Prop, got[schedule.Prop], schedule.PropOf, got[schedule.PropOf])
	}
	again := map[string]string{message.PropDelay: "3"}
	for k, v := range got {
		again[k] = v
	}
	delete(again, message.PropTimerOutMS)
	if plan := PlanSend(again, 10_000, Limits{Enabled: true, MaxDelay: 365 * 24 * time.Hour}); plan.Code != 0 || again[schedule.Prop] != "" {
		t.Fatalf("a fire sent back with delay level 3: %+v (%s %q)", plan, schedule.Prop, again[schedule.Prop])
	}
	if id, ok := isWrittenBack(p.record); !ok || id != p.identity() {
		t.Fatalf("scan identity of the fire %q %v, want %q", id, ok, p.identity())
	}
	n := p.next
	if n.key.Topic != Topic || n.due != 7000 || n.identity() != "U1@7000"+nextSuffix || n.cancelKey() != "U1@5000" {
		t.Fatalf("next put %+v (identity %s)", n, n.identity())
	}
	nr, _, err := message.Decode(n.record)
	if err != nil {
		t.Fatal(err)
	}
	np := message.DecodeProperties(nr.Properties)
	if nr.Topic != Topic || nr.QueueID != 0 || nr.StoreTimestamp != 6000 || string(nr.Body) != "payload" ||
		np[message.PropTimerOutMS] != "7000" || np[schedule.PropSeq] != "4" || np[schedule.PropPrevMs] != "5000" ||
		np[message.PropUniqKey] != "U1" || np[message.PropRealTopic] != "orders" || np["TIMER_ROLL_TIMES"] != "" {
		t.Fatalf("next record %s: %v", nr.Topic, np)
	}
	if id, ok := isWrittenBack(n.record); !ok || id != n.identity() {
		t.Fatalf("scan identity of the next fire %q %v, want %q", id, ok, n.identity())
	}
	// The next record fires in turn: seq 4 at 7000, its next at 9000.
	st2, off2, size2 := storeWithRecord(t, mustDecode(t, n.record))
	raw2, _ := st2.CommitLog.ReadAt(off2, size2)
	p2, reason := rebuild(raw2, timerwheel.Timer{DeliverMs: 7000, CommitLogOffset: off2, Size: size2, QueueOffset: -1}, 7001)
	if reason != "" || p2.next == nil || p2.next.due != 9000 || p2.identity() != FireUniqKey("U1", 4, 7000)+"@7000" {
		t.Fatalf("second fire: %q %+v", reason, p2)
	}
}

func mustDecode(t *testing.T, rec []byte) *message.Record {
	t.Helper()
	r, _, err := message.Decode(rec)
	if err != nil {
		t.Fatal(err)
	}
	return &r
}

// A fire's id reads as the Java client's: 32 hex digits whose bytes 10-13
// are the fire time since the start of its month; ids differ by schedule
// and by sequence number.
func TestFireUniqKey(t *testing.T) {
	due := int64(1_796_000_000_123) // late November 2026
	id := FireUniqKey("ORIGIN", 7, due)
	if len(id) != 32 || strings.ToUpper(id) != id {
		t.Fatalf("id %q", id)
	}
	b, err := hex.DecodeString(id)
	if err != nil {
		t.Fatal(err)
	}
	at := time.UnixMilli(due).UTC()
	month := time.Date(at.Year(), at.Month(), 1, 0, 0, 0, 0, time.UTC)
	if got := int64(binary.BigEndian.Uint32(b[10:14])); got != due-month.UnixMilli() {
		t.Fatalf("time bytes %d, want %d", got, due-month.UnixMilli())
	}
	seen := map[string]bool{id: true}
	for _, other := range []string{FireUniqKey("ORIGIN", 8, due), FireUniqKey("OTHER", 7, due), FireUniqKey("ORIGIN", 7, due+1)} {
		if seen[other] {
			t.Fatalf("two fires share id %s", other)
		}
		seen[other] = true
	}
	if FireUniqKey("ORIGIN", 7, due) != id {
		t.Fatal("the id is not a function of origin, seq and due time")
	}
}

// TestRecurringFireAllocatesNothingPerFire rebuilds many fires of
// schedules into one batch: both records of every fire go into the
// batch's arena and the next-fire puts into its slab, so the batch costs
// those two allocations whatever its size; every put still holds its own
// record and identities.
func TestRecurringFireAllocatesNothingPerFire(t *testing.T) {
	host := netip.MustParseAddrPort("10.0.0.1:10911")
	props := map[string]string{message.PropRealTopic: "orders", message.PropRealQueueID: "2",
		message.PropTimerOutMS: "7000", message.PropUniqKey: "U9", schedule.Prop: "@every 1s", schedule.PropSeq: "5"}
	st, off, size := storeWithRecord(t, &message.Record{BornHost: host, StoreHost: host, Topic: Topic,
		Body: []byte("tick"), Properties: message.EncodeProperties(props)})
	raw, err := st.CommitLog.ReadAt(off, size)
	if err != nil {
		t.Fatal(err)
	}
	const n = 100
	var b rebuilder
	puts := make([]put, 0, 2*n)
	timer := timerwheel.Timer{DeliverMs: 7000, AddedMs: 1}
	b.rebuild(raw, timer, 7001) // warm the scratch, the topic and schedule caches
	allocs := testing.AllocsPerRun(1, func() {
		b.reset(n, 2*n*(int(size)+2*rebuildGrowth))
		puts = puts[:0]
		for range n {
			p, reason := b.rebuild(raw, timer, 7001)
			if reason != "" || p.next == nil {
				t.Fatalf("rebuild: %q, next %v", reason, p.next)
			}
			puts = append(puts, p, *p.next)
		}
	})
	if allocs > 2 {
		t.Errorf("%v allocations for %d fires, want the arena's and the slab's only", allocs, n)
	}
	fireID := FireUniqKey("U9", 5, 7000)
	for i := 0; i < len(puts); i += 2 {
		fire, next := puts[i], puts[i+1]
		if fire.identity() != fireID+"@7000" || fire.cancelKey() != "U9@7000" ||
			next.identity() != "U9@8000"+nextSuffix || next.cancelKey() != "U9@7000" {
			t.Fatalf("fire %d: identity %s cancel %s; next: identity %s cancel %s", i/2,
				fire.identity(), fire.cancelKey(), next.identity(), next.cancelKey())
		}
		r, _, err := message.Decode(next.record)
		if err != nil || r.Topic != Topic || string(r.Body) != "tick" {
			t.Fatalf("next %d: %+v %v", i/2, r, err)
		}
		got := message.DecodeProperties(r.Properties)
		if got[message.PropTimerOutMS] != "8000" || got[schedule.PropSeq] != "6" || got[schedule.PropPrevMs] != "7000" ||
			got[message.PropUniqKey] != "U9" || got[schedule.Prop] != "@every 1s" {
			t.Fatalf("next %d properties %v", i/2, got)
		}
	}
}

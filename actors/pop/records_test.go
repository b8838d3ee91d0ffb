package pop

import (
	"reflect"
	"testing"

	"github.com/wheelmq/wheelmq/storage/message"
)

func TestJournalEntryRoundTrip(t *testing.T) {
	for _, en := range []entry{
		{kind: 'P', key: qkey{"g", "t", 3}, off: 42, popTime: 1700000000000, invisible: 30000, attempt: 1},
		{kind: 'A', key: qkey{"%RETRY%g", "t-1", 0}, off: 0, popTime: 1, invisible: 0},
		{kind: 'C', key: qkey{"g", "t", 7}, off: 1 << 40, popTime: 5, invisible: 60000, attempt: 17},
	} {
		b, err := en.encode()
		if err != nil {
			t.Fatal(err)
		}
		body, err := message.PeekBody(b)
		if err != nil {
			t.Fatal(err)
		}
		got, err := parseEntry(body)
		if err != nil {
			t.Fatal(err)
		}
		if got != en {
			t.Fatalf("round trip: got %+v, want %+v", got, en)
		}
	}
	for _, bad := range []string{"", "v2 P g t 0 1 2 3 4", "v1 P g t x 1 2 3 4", "v1 P g t 0 1 2 3", "v1 PP g t 0 1 2 3 4"} {
		if _, err := parseEntry([]byte(bad)); err == nil {
			t.Errorf("parseEntry(%q) accepted", bad)
		}
	}
}

func TestReviveRoundTripAndGrouping(t *testing.T) {
	k1, k2 := qkey{"g", "t", 0}, qkey{"g", "t", 1}
	revs := revivesOf([]entry{
		{kind: 'P', key: k1, off: 1, popTime: 100, invisible: 50},
		{kind: 'P', key: k1, off: 2, popTime: 100, invisible: 50},
		{kind: 'P', key: k2, off: 9, popTime: 100, invisible: 50},
		{kind: 'A', key: k1, off: 0},
		{kind: 'C', key: k1, off: 3, popTime: 120, invisible: 10},
	})
	want := []revive{{k1, 100, 50, []int64{1, 2}}, {k2, 100, 50, []int64{9}}, {k1, 120, 10, []int64{3}}}
	if !reflect.DeepEqual(revs, want) {
		t.Fatalf("revivesOf = %+v, want %+v", revs, want)
	}
	for _, r := range revs {
		b, err := r.encode(1)
		if err != nil {
			t.Fatal(err)
		}
		rec, _, err := message.Decode(b)
		if err != nil {
			t.Fatal(err)
		}
		props := message.DecodeProperties(rec.Properties)
		if props[message.PropRealTopic] != ReviveTopic || props[message.PropTimerOutMS] == "" {
			t.Fatalf("revive timer properties %v", props)
		}
		got, err := parseRevive(rec.Body)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, r) {
			t.Fatalf("round trip: got %+v, want %+v", got, r)
		}
	}
	for _, bad := range []string{"", "v1 g t 0 1 2", "v1 g t 0 1 2 x", "v1 g t q 1 2 3", "v2 g t 0 1 2 3"} {
		if _, err := parseRevive([]byte(bad)); err == nil {
			t.Errorf("parseRevive(%q) accepted", bad)
		}
	}
}

// FuzzJournalRecords feeds the journal and revive parsers arbitrary bodies:
// no panic, and what parses encodes back to an equal value.
func FuzzJournalRecords(f *testing.F) {
	f.Add([]byte("v1 P g t 0 1 2 3 4"))
	f.Add([]byte("v1 g t 0 1 2 3,4,5"))
	f.Fuzz(func(t *testing.T, body []byte) {
		if en, err := parseEntry(body); err == nil {
			b, err := en.encode()
			if err != nil {
				return // a name too long for a record
			}
			back, _ := message.PeekBody(b)
			if got, err := parseEntry(back); err != nil || got != en {
				t.Fatalf("entry %q: re-parsed %+v, %v", body, got, err)
			}
		}
		if r, err := parseRevive(body); err == nil {
			if got, err := parseRevive([]byte(r.body())); err != nil || !reflect.DeepEqual(got, r) {
				t.Fatalf("revive %q: re-parsed %+v, %v", body, got, err)
			}
		}
	})
}

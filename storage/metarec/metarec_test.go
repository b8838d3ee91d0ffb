package metarec

import (
	"errors"
	"net/netip"
	"reflect"
	"testing"

	"github.com/wheelmq/wheelmq/storage/meta"
)

func samples() []Record {
	return []Record{
		{Kind: KindOffsets, Origin: 7, Offsets: []Offset{{"t1", "g1", 0, 42}, {"t1", "g2", 3, -1}}},
		{Kind: KindTopicPut, Origin: 1 << 60, Topics: []meta.TopicConfig{{TopicName: "t1", ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6}}},
		{Kind: KindTopicDelete, Names: []string{"t1", "t2"}},
		{Kind: KindGroupPut, Groups: []meta.SubscriptionGroupConfig{meta.NewSubscriptionGroupConfig("g1")}},
		{Kind: KindGroupDelete, Names: []string{"g1"}},
		{Kind: KindRequestModePut, Origin: 3, Modes: []meta.RequestMode{
			{ConsumerGroup: "g1", Topic: "t1", Mode: meta.RequestModePop, PopShareQueueNum: 2},
			{ConsumerGroup: "g2", Topic: "t1", Mode: meta.RequestModePull}}},
	}
}

func TestRoundTrip(t *testing.T) {
	host := netip.MustParseAddrPort("10.0.0.1:10911")
	for _, r := range samples() {
		rec, err := Message(r, host, 1000)
		if err != nil {
			t.Fatal(err)
		}
		got, err := FromMessage(rec)
		if err != nil {
			t.Fatalf("%v: %v", r.Kind, err)
		}
		want := r
		if !reflect.DeepEqual(normal(got), normal(want)) {
			t.Fatalf("%v: got %+v want %+v", r.Kind, got, want)
		}
	}
}

// normal makes nil and empty slices compare equal.
func normal(r Record) Record {
	if len(r.Offsets) == 0 {
		r.Offsets = nil
	}
	return r
}

func TestDecodeRejects(t *testing.T) {
	good, _ := Encode(nil, samples()[0])
	for name, b := range map[string][]byte{
		"short":    good[:5],
		"version":  append([]byte{9}, good[1:]...),
		"kind":     append([]byte{Version, 99}, good[2:]...),
		"trailing": append(append([]byte{}, good...), 0),
		"cut":      good[:len(good)-3],
	} {
		if _, err := Decode(b); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: err %v, want ErrInvalid", name, err)
		}
	}
}

// TestRequestModeLayout pins the request-mode entry's bytes as
// docs/formats.md documents them, and refuses an unknown mode.
func TestRequestModeLayout(t *testing.T) {
	b, err := Encode(nil, Record{Kind: KindRequestModePut, Origin: 1,
		Modes: []meta.RequestMode{{ConsumerGroup: "g", Topic: "tt", Mode: meta.RequestModePop, PopShareQueueNum: 3}}})
	if err != nil {
		t.Fatal(err)
	}
	want := []byte{Version, byte(KindRequestModePut), 0, 0, 0, 0, 0, 0, 0, 1, // header
		1,      // count
		1, 'g', // group
		2, 't', 't', // topic
		2,          // POP
		0, 0, 0, 3} // popShareQueueNum
	if string(b) != string(want) {
		t.Fatalf("encoded % x, want % x", b, want)
	}
	bad := append([]byte{}, want...)
	bad[len(bad)-5] = 9
	if _, err := Decode(bad); !errors.Is(err, ErrInvalid) {
		t.Fatalf("mode byte 9: err %v, want ErrInvalid", err)
	}
	if _, err := Encode(nil, Record{Kind: KindRequestModePut, Modes: []meta.RequestMode{{ConsumerGroup: "g", Topic: "t", Mode: "PUSH"}}}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("mode PUSH encoded: err %v, want ErrInvalid", err)
	}
}

func FuzzDecode(f *testing.F) {
	for _, r := range samples() {
		b, _ := Encode(nil, r)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := Decode(b)
		if err != nil {
			return
		}
		again, err := Encode(nil, r)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		r2, err := Decode(again)
		if err != nil {
			t.Fatalf("decode(encode(decode(b))): %v", err)
		}
		third, _ := Encode(nil, r2)
		if string(third) != string(again) {
			t.Fatal("encoding is not stable")
		}
	})
}

func TestDescribe(t *testing.T) {
	rec, err := Message(samples()[0], netip.MustParseAddrPort("10.0.0.1:10911"), 1)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := Describe(rec), "system record (wheelmq metadata): offsets, 2 entries, origin 0000000000000007"; got != want {
		t.Fatalf("Describe = %q, want %q", got, want)
	}
}

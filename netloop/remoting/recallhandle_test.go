package remoting

import (
	"encoding/base64"
	"testing"
)

func TestRecallHandle(t *testing.T) {
	h := RecallHandle("orders", "broker-a", 1796208215925, "0102FC0000000105320B21905400000007")
	got, err := ParseRecallHandle(h)
	if err != nil || got != (Recall{Topic: "orders", BrokerName: "broker-a", DueMs: 1796208215925, Uniq: "0102FC0000000105320B21905400000007"}) {
		t.Fatalf("%q: %+v %v", h, got, err)
	}
	// Java's encoder pads; others do not: both decode.
	raw := base64.RawURLEncoding.EncodeToString([]byte("v1 t b 5 u"))
	if r, err := ParseRecallHandle(raw); err != nil || r.DueMs != 5 || r.Uniq != "u" {
		t.Fatalf("unpadded %q: %+v %v", raw, r, err)
	}
	for _, bad := range []string{"", "!!!", base64.URLEncoding.EncodeToString([]byte("v2 t b 5 u")),
		base64.URLEncoding.EncodeToString([]byte("v1 t b x u")), base64.URLEncoding.EncodeToString([]byte("v1 t b 5")),
		base64.URLEncoding.EncodeToString([]byte("v1  b 5 u")), base64.URLEncoding.EncodeToString([]byte("v1 t b 5 u extra"))} {
		if _, err := ParseRecallHandle(bad); err == nil {
			t.Errorf("%q decoded", bad)
		}
	}
}

func FuzzParseRecallHandle(f *testing.F) {
	f.Add(RecallHandle("orders", "broker-a", 1796208215925, "0102FC"))
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRecallHandle(s)
		if err != nil {
			return
		}
		back, err := ParseRecallHandle(RecallHandle(r.Topic, r.BrokerName, r.DueMs, r.Uniq))
		if err != nil || back != r {
			t.Fatalf("%q: %+v re-encoded to %+v %v", s, r, back, err)
		}
	})
}

package grpcgw

import (
	"crypto/md5"
	"encoding/hex"
	"net/netip"
	"strings"
	"testing"

	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"

	"github.com/wheelmq/wheelmq/storage/message"
)

func TestParseHandle(t *testing.T) {
	for _, tc := range []struct {
		in   string
		ok   bool
		want receipt
	}{
		{"12 1700000000000 30000 0 0 broker-a 3 12", true, receipt{startOffset: 12, popTime: 1700000000000, invisibleMs: 30000,
			topicType: "0", brokerName: "broker-a", queueID: 3, offset: 12, clOffset: -1}},
		{"12 1700000000000 30000 0 0 broker-a 3 12#4096", true, receipt{startOffset: 12, popTime: 1700000000000, invisibleMs: 30000,
			topicType: "0", brokerName: "broker-a", queueID: 3, offset: 12, clOffset: 4096}},
		{"", false, receipt{}},
		{"1 2 3 4 5 b 6", false, receipt{}},                 // seven fields
		{"-1 2 3 4 5 b 6 7", false, receipt{}},              // negative
		{"1 2 3 4 5  6 7", false, receipt{}},                // no broker name
		{"1 2 3 99999999999 5 b 6 7", false, receipt{}},     // revive queue beyond int32
		{"1 2 3 4 5 b 6 7#x", false, receipt{}},             // bad suffix
		{"1 2 3 4 5 b 6 7#-5", false, receipt{}},            // negative suffix
		{strings.Repeat("1 ", 600) + "b", false, receipt{}}, // too long
	} {
		got, err := parseClientHandle(tc.in)
		if (err == nil) != tc.ok {
			t.Errorf("%q: err %v, want ok %v", tc.in, err, tc.ok)
			continue
		}
		if !tc.ok {
			continue
		}
		got.broker = ""
		if got != tc.want {
			t.Errorf("%q: %+v, want %+v", tc.in, got, tc.want)
		}
	}
}

func TestHandleRoundTrip(t *testing.T) {
	h := clientHandle("7 1700000000000 10000 1 0 broker-a 2 9", 555)
	r, err := parseClientHandle(h)
	if err != nil || r.clOffset != 555 || r.offset != 9 || r.queueID != 2 {
		t.Fatalf("%q: %+v %v", h, r, err)
	}
	ph := r.handle()
	if ph.PopTime != 1700000000000 || ph.InvisibleTime != 10000 || ph.QueueID != 2 || ph.Offset != 9 || ph.StartOffset != 7 || ph.BrokerName != "broker-a" {
		t.Fatalf("the broker's handle of %q: %+v", h, ph)
	}
	ph.PopTime, ph.InvisibleTime = 1700000020000, 5000 // a change's new handle
	n, err := parseClientHandle(clientHandle(ph.String(), r.clOffset))
	if err != nil || n.popTime != 1700000020000 || n.invisibleMs != 5000 || n.offset != 9 || n.clOffset != 555 || n.brokerName != "broker-a" {
		t.Fatalf("changed: %+v %v", n, err)
	}
}

func TestTxIDRoundTrip(t *testing.T) {
	mid := message.OffsetMsgID(netip.MustParseAddrPort("127.0.0.1:10911"), 123456)
	ref, err := decodeTxID(encodeTxID(mid, "77"))
	if err != nil || ref.commitLogOffset != 123456 || ref.halfOffset != 77 || ref.offsetMsgID != mid {
		t.Fatalf("%+v %v", ref, err)
	}
	for _, bad := range []string{"", "wtx1-", "wtx1-" + mid, "wtx1-" + mid + "-x", "wtx2-" + mid + "-1", "wtx1-ZZ-1"} {
		if _, err := decodeTxID(bad); err == nil {
			t.Errorf("%q decoded", bad)
		}
	}
}

func TestBodyDigestIsUpperMD5(t *testing.T) {
	body := []byte("hello")
	sum := md5.Sum(body)
	d := BodyDigest(body)
	if d.GetType() != v2.DigestType_MD5 || d.GetChecksum() != strings.ToUpper(hex.EncodeToString(sum[:])) {
		t.Fatalf("%v", d)
	}
}

func FuzzParseClientHandle(f *testing.F) {
	f.Add("12 1700000000000 30000 0 0 broker-a 3 12#4096")
	f.Add("1 2 3 4 5 b 6 7")
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		r, err := parseClientHandle(s)
		if err != nil {
			return
		}
		if r.popTime < 0 || r.invisibleMs < 0 || r.offset < 0 || r.queueID < 0 || r.brokerName == "" {
			t.Fatalf("%q parsed to %+v", s, r)
		}
		if n, err := parseHandle(r.handle().String()); err != nil || n.popTime != r.popTime || n.invisibleMs != r.invisibleMs ||
			n.queueID != r.queueID || n.offset != r.offset || n.brokerName != r.brokerName {
			t.Fatalf("the broker's handle of %q does not round-trip: %+v %v", s, n, err)
		}
	})
}

func FuzzDecodeTxID(f *testing.F) {
	f.Add("wtx1-7F00000100002A9F0000000000001E240-77")
	f.Add("wtx1--")
	f.Fuzz(func(t *testing.T, s string) {
		if ref, err := decodeTxID(s); err == nil && (ref.commitLogOffset < 0 || ref.halfOffset < 0) {
			t.Fatalf("%q decoded to %+v", s, ref)
		}
	})
}

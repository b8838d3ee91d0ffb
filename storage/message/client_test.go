package message

import (
	"bytes"
	"fmt"
	"net/netip"
	"testing"

	"github.com/apache/rocketmq-client-go/v2/primitive"
)

// TestGoClientDecodesRecords feeds our encoding to the official Go client's
// decoder (what a consumer does with a pull body) and compares the fields it
// exposes.
func TestGoClientDecodesRecords(t *testing.T) {
	noUniq := sampleRecord()
	noUniq.Properties = EncodeProperties(map[string]string{PropTags: "TagB"})
	tests := []struct {
		name  string
		rec   Record
		msgID string // expected MessageExt.MsgId ("" = offsetMsgId)
	}{
		{"ipv4 with UNIQ_KEY", sampleRecord(), "C0A8000A30396D4F1E6F1A2B3C4D0001"},
		{"ipv6 with UNIQ_KEY", sampleRecordV6(), "C0A8000A30396D4F1E6F1A2B3C4D0001"},
		{"ipv4 without UNIQ_KEY", noUniq, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			enc := tt.rec.AppendTo(nil)
			msgs := primitive.DecodeMessage(enc)
			if len(msgs) != 1 {
				t.Fatalf("client decoded %d messages", len(msgs))
			}
			checkClientMessage(t, msgs[0], tt.rec, len(enc))
			want := tt.msgID
			if want == "" {
				want = tt.rec.OffsetMsgID()
			}
			if msgs[0].MsgId != want {
				t.Errorf("MsgId = %q, want %q", msgs[0].MsgId, want)
			}
		})
	}
}

// TestGoClientDecodesPullBody checks a pull body of back-to-back records.
func TestGoClientDecodesPullBody(t *testing.T) {
	var body []byte
	var recs []Record
	for i := range 4 {
		r := sampleRecord()
		if i == 2 {
			r = sampleRecordV6()
		}
		r.QueueOffset = 100 + int64(i)
		r.PhysicalOffset = 5000 + int64(len(body))
		r.Body = fmt.Appendf(nil, "body-%d", i)
		r.Properties = AppendProperty(r.Properties, PropUniqKey, fmt.Sprintf("UNIQ%028d", i))
		recs = append(recs, r)
		body = r.AppendTo(body)
	}
	msgs := primitive.DecodeMessage(body)
	if len(msgs) != len(recs) {
		t.Fatalf("client decoded %d messages, want %d", len(msgs), len(recs))
	}
	for i, m := range msgs {
		checkClientMessage(t, m, recs[i], recs[i].EncodedSize())
		if want := fmt.Sprintf("UNIQ%028d", i); m.MsgId != want {
			t.Errorf("message %d: MsgId = %q, want %q (AppendProperty must override)", i, m.MsgId, want)
		}
	}
}

func checkClientMessage(t *testing.T, m *primitive.MessageExt, r Record, size int) {
	t.Helper()
	if m.Topic != r.Topic {
		t.Errorf("Topic = %q, want %q", m.Topic, r.Topic)
	}
	if !bytes.Equal(m.Body, r.Body) {
		t.Errorf("Body = %q, want %q", m.Body, r.Body)
	}
	wantProps := DecodeProperties(r.Properties)
	gotProps := m.GetProperties()
	if len(gotProps) != len(wantProps) {
		t.Errorf("properties = %v, want %v", gotProps, wantProps)
	}
	for k, v := range wantProps {
		if gotProps[k] != v {
			t.Errorf("property %s = %q, want %q", k, gotProps[k], v)
		}
	}
	if m.QueueOffset != r.QueueOffset || m.CommitLogOffset != r.PhysicalOffset || m.Queue.QueueId != int(r.QueueID) {
		t.Errorf("offsets: queue %d/%d, commitlog %d/%d, queueId %d/%d",
			m.QueueOffset, r.QueueOffset, m.CommitLogOffset, r.PhysicalOffset, m.Queue.QueueId, r.QueueID)
	}
	if m.OffsetMsgId != r.OffsetMsgID() {
		t.Errorf("OffsetMsgId = %q, want %q", m.OffsetMsgId, r.OffsetMsgID())
	}
	if int(m.StoreSize) != size || m.Flag != r.Flag || m.ReconsumeTimes != r.ReconsumeTimes ||
		m.BornTimestamp != r.BornTimestamp || m.StoreTimestamp != r.StoreTimestamp {
		t.Errorf("scalar fields differ: %+v", m)
	}
	if m.BodyCRC != BodyCRC(r.Body) {
		t.Errorf("BodyCRC = %d, want %d", m.BodyCRC, BodyCRC(r.Body))
	}
	// The client prints hosts as ip:port without brackets for IPv6.
	for _, h := range []struct {
		got  string
		want netip.AddrPort
	}{{m.BornHost, r.BornHost}, {m.StoreHost, r.StoreHost}} {
		if want := fmt.Sprintf("%s:%d", h.want.Addr(), h.want.Port()); h.got != want {
			t.Errorf("host = %q, want %q", h.got, want)
		}
	}
}

package txcheck

import (
	"fmt"
	"net/netip"
	"testing"

	"github.com/wheelmq/wheelmq/actors/timer"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/message"
	"github.com/wheelmq/wheelmq/storage/meta"
)

func TestParseOpBody(t *testing.T) {
	for _, tt := range []struct {
		body string
		want string
	}{
		{"17,", "[17]"},
		{"17,18,21,", "[17 18 21]"},
		{"0,", "[0]"},
		{"", "[]"},
		{",,", "[]"},
		{"5", "[5]"},
		{"x,3,-1,9223372036854775808,4,", "[3 4]"},
		{" 7 ,", "[7]"},
	} {
		got := ParseOpBody([]byte(tt.body))
		if fmt.Sprint(got) != tt.want && !(len(got) == 0 && tt.want == "[]") {
			t.Errorf("ParseOpBody(%q) = %v, want %s", tt.body, got, tt.want)
		}
	}
}

// FuzzParseOpBody: never panics, never returns a negative offset, and
// reads back what opRecord writes.
func FuzzParseOpBody(f *testing.F) {
	for _, s := range []string{"17,", "1,2,3,", "", "a,b", "-5,", "99999999999999999999,"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, q := range ParseOpBody(b) {
			if q < 0 {
				t.Fatalf("negative offset %d from %q", q, b)
			}
			if again := ParseOpBody(fmt.Appendf(nil, "%d,", q)); len(again) != 1 || again[0] != q {
				t.Fatalf("offset %d does not round trip", q)
			}
		}
	})
}

func testHalf(props map[string]string) half {
	return half{rec: message.Record{PhysicalOffset: 4242, QueueOffset: 3, Topic: meta.TopicTransHalf, Body: []byte("b"),
		StoreHost: netip.MustParseAddrPort("10.0.0.9:10911"), Properties: message.EncodeProperties(props)}, props: props}
}

func TestCommitRecordRefusals(t *testing.T) {
	lim := timer.Limits{Enabled: true, MaxDelay: 1000}
	for _, tt := range []struct {
		name  string
		props map[string]string
		code  int32
	}{
		{"no real topic", map[string]string{message.PropRealQueueID: "1"}, remoting.SystemError},
		{"bad real queue", map[string]string{message.PropRealTopic: "T", message.PropRealQueueID: "x"}, remoting.SystemError},
		{"negative real queue", map[string]string{message.PropRealTopic: "T", message.PropRealQueueID: "-1"}, remoting.SystemError},
		{"bad timer", map[string]string{message.PropRealTopic: "T", message.PropRealQueueID: "1", message.PropTimerDelayMS: "soon"},
			remoting.MessageIllegal},
		{"plain", map[string]string{message.PropRealTopic: "T", message.PropRealQueueID: "1"}, 0},
	} {
		key, rec, code, remark := commitRecord(testHalf(tt.props), 1_000_000, lim)
		if code != tt.code || (code != 0) != (remark != "") {
			t.Errorf("%s: code %d %q, want %d", tt.name, code, remark, tt.code)
		}
		if code == 0 && (key.Topic != "T" || key.QueueID != 1 || len(rec) == 0) {
			t.Errorf("%s: key %+v", tt.name, key)
		}
	}
}

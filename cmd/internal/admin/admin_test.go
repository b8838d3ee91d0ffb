package admin

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/netloop/portres"
)

func TestNormalize(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"plain JSON", `{"a":1,"b":[true,null,"x"]}`, `{"a":1,"b":[true,null,"x"]}`},
		{"whitespace", " { \"a\" : [ 1 , 2 ] } ", `{"a":[1,2]}`},
		{"long keys", `{"brokerAddrs":{0:"1.2.3.4:10911",1:"1.2.3.5:10911"},"brokerName":"b"}`,
			`{"brokerAddrs":{"0":"1.2.3.4:10911","1":"1.2.3.5:10911"},"brokerName":"b"}`},
		{"object keys", `{"offsetTable":{{"brokerName":"broker-a","queueId":0,"topic":"T"}:{"brokerOffset":10}}}`,
			`{"offsetTable":{"{\"brokerName\":\"broker-a\",\"queueId\":0,\"topic\":\"T\"}":{"brokerOffset":10}}}`},
		{"object key with spaces", `{{ "queueId" : 1 } : 2}`, `{"{\"queueId\":1}":2}`},
		{"escapes kept", `{"a\"b":"c\\d"}`, `{"a\"b":"c\\d"}`},
		{"empty", `{"a":{},"b":[]}`, `{"a":{},"b":[]}`},
	}
	for _, tt := range tests {
		got, err := Normalize([]byte(tt.in))
		if err != nil || string(got) != tt.want {
			t.Errorf("%s: got %s %v, want %s", tt.name, got, err, tt.want)
		}
	}
	for _, bad := range []string{"", "{", `{"a"}`, `{"a":}`, `{"a":1,}`, `[1 2]`, `{"a":1} x`, `"abc`, `{"a":tru}`,
		strings.Repeat("[", 100) + strings.Repeat("]", 100)} {
		if _, err := Normalize([]byte(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func FuzzNormalize(f *testing.F) {
	f.Add([]byte(`{"consumeTps":0.0,"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:{"brokerOffset":10}}}`))
	f.Add([]byte(`{"brokerAddrs":{0:"a",1:"b"}}`))
	f.Add([]byte(`[1,"x",{"y":null}]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		out, err := Normalize(b)
		if err != nil {
			return
		}
		if !json.Valid(out) {
			t.Fatalf("Normalize(%q) = %q: not valid JSON", b, out)
		}
		if json.Valid(b) {
			again, err := Normalize(out)
			if err != nil || string(again) != string(out) {
				t.Fatalf("not idempotent on valid JSON: %q -> %q -> %q %v", b, out, again, err)
			}
		}
	})
}

func TestDecodeConsumeStats(t *testing.T) {
	mq := MessageQueue{Topic: "T", BrokerName: "broker-a", QueueID: 0}
	want := QueueProgress{BrokerOffset: 10, ConsumerOffset: 8, PullOffset: 8, LastTimestamp: 1700000000000}
	bodies := map[string]string{
		// Java's fastjson form (facts 11.13, verified bytes).
		"fastjson": `{"consumeTps":0.0,"offsetTable":{{"brokerName":"broker-a","queueId":0,"topic":"T"}:` +
			`{"brokerOffset":10,"consumerOffset":8,"lastTimestamp":1700000000000,"pullOffset":8}}}`,
		// Standard JSON with the key stringified.
		"stringified": `{"consumeTps":1.5,"offsetTable":{"{\"brokerName\":\"broker-a\",\"queueId\":0,\"topic\":\"T\"}":` +
			`{"brokerOffset":10,"consumerOffset":8,"lastTimestamp":1700000000000,"pullOffset":8}}}`,
	}
	for name, body := range bodies {
		cs, err := DecodeConsumeStats([]byte(body))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := cs.Queues[mq]; got != want || len(cs.Queues) != 1 || got.Lag() != 2 {
			t.Errorf("%s: got %+v", name, cs)
		}
	}
	for _, tt := range []struct {
		q    QueueProgress
		want int64
	}{
		{QueueProgress{BrokerOffset: 5, ConsumerOffset: 3}, 2},
		{QueueProgress{BrokerOffset: 5, ConsumerOffset: -1}, 5},
		{QueueProgress{BrokerOffset: 0, ConsumerOffset: -1}, 0},
		{QueueProgress{BrokerOffset: 3, ConsumerOffset: 7}, 0},
	} {
		if got := tt.q.Lag(); got != tt.want {
			t.Errorf("lag of %+v = %d, want %d", tt.q, got, tt.want)
		}
	}
	if _, err := DecodeConsumeStats([]byte(`{"offsetTable":{"notjson":{}}}`)); err == nil {
		t.Error("a key that is not a MessageQueue must fail")
	}
	ts, err := DecodeTopicStats([]byte(`{"offsetTable":{{"brokerName":"b","queueId":3,"topic":"T"}:` +
		`{"lastUpdateTimestamp":5,"maxOffset":9,"minOffset":1}},"topicPutTps":0.0}`))
	if err != nil || ts[MessageQueue{Topic: "T", BrokerName: "b", QueueID: 3}] != (TopicOffset{1, 9, 5}) {
		t.Errorf("topic stats %+v %v", ts, err)
	}
}

// TestCallDeadline checks that a server that accepts and never answers
// costs one timeout, not a hang.
func TestCallDeadline(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	conns := make(chan net.Conn, 1)
	go func() {
		c, err := l.Accept()
		if err == nil {
			conns <- c
		}
	}()
	s := &Session{Timeout: 200 * time.Millisecond}
	defer s.Close()
	_, err = s.RuntimeInfo(context.Background(), l.Addr().String())
	if err == nil || !strings.Contains(err.Error(), "no answer within 200ms") {
		t.Fatalf("got %v, want a deadline error", err)
	}
	(<-conns).Close()
}

func TestUnreachable(t *testing.T) {
	addr := portres.Hold(t) // nobody listens there
	s := &Session{Timeout: time.Second}
	_, err := s.Brokers(context.Background(), addr)
	var ue *UnreachableError
	if !errors.As(err, &ue) || ue.Addr != addr {
		t.Fatalf("got %v, want UnreachableError for %s", err, addr)
	}
}

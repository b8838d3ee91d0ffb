package grpcgw

import (
	"testing"
	"time"

	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"
)

// TestEmptyReceive: only a push consumer whose long poll ran its full
// course is answered OK with no messages (the Go v5 SDK's in-flight count
// then goes down, see emptyReceive); a cut-short poll, a zero poll and any
// other client get RocketMQ's MESSAGE_NOT_FOUND.
func TestEmptyReceive(t *testing.T) {
	start := time.Unix(1000, 0)
	for _, c := range []struct {
		name    string
		typ     v2.ClientType
		poll    time.Duration
		elapsed time.Duration
		want    v2.Code
	}{
		{"push consumer, full poll", v2.ClientType_PUSH_CONSUMER, 20 * time.Second, 20 * time.Second, v2.Code_OK},
		{"push consumer, poll cut short", v2.ClientType_PUSH_CONSUMER, 20 * time.Second, 3 * time.Second, v2.Code_MESSAGE_NOT_FOUND},
		{"push consumer, zero poll", v2.ClientType_PUSH_CONSUMER, 0, 0, v2.Code_MESSAGE_NOT_FOUND},
		{"simple consumer, full poll", v2.ClientType_SIMPLE_CONSUMER, 20 * time.Second, 21 * time.Second, v2.Code_MESSAGE_NOT_FOUND},
		{"unregistered client", v2.ClientType_CLIENT_TYPE_UNSPECIFIED, 5 * time.Second, 5 * time.Second, v2.Code_MESSAGE_NOT_FOUND},
	} {
		s := &session{clientType: c.typ}
		if got := s.emptyReceive(start, c.poll, start.Add(c.elapsed)).GetCode(); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

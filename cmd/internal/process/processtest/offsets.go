package processtest

import (
	"strconv"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// WaitCommitted waits (up to timeout) until group's committed offset of
// every queue of topic on the broker at addr has reached the queue's end:
// a consumer that got everything has also told the broker so (the official
// Go client commits every 5 s, and on Shutdown). It fails the test with
// each queue's offsets otherwise.
func WaitCommitted(t testing.TB, addr, group, topic string, queues int, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		behind := ""
		for q := range queues {
			qs := strconv.Itoa(q)
			end := Invoke(t, addr, remoting.NewRequest(remoting.GetMaxOffset, map[string]string{"topic": topic, "queueId": qs}, nil))
			if end.Code != remoting.Success {
				t.Fatalf("max offset of %s/%d: code %d %s", topic, q, end.Code, end.Remark)
			}
			off := Invoke(t, addr, remoting.NewRequest(remoting.QueryConsumerOffset,
				map[string]string{"consumerGroup": group, "topic": topic, "queueId": qs}, nil))
			e, o := end.Field("offset"), "none"
			if off.Code == remoting.Success {
				o = off.Field("offset")
			}
			if o != e {
				behind += " queue " + qs + ": committed " + o + " of " + e + ";"
			}
		}
		if behind == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("group %s did not commit %s to the end within %v:%s", group, topic, timeout, behind)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

package process_test

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/message"
)

// TestListTimersRemoting: LIST_TIMER_MESSAGES (3502) over real TCP on a
// broker with an ACL: an account with SUB on the topic pages through its
// pending timers in due order by the cursor; one without is refused with
// no body; an unknown topic, a bad limit and a bad cursor are refused.
func TestListTimersRemoting(t *testing.T) {
	n, _ := startACLNode(t, aclFile("orders=SUB"))
	createTopicAs(t, n, aclAdmin, "orders", 1)
	b := n.BrokerAddr()
	now := time.Now()
	var ids []string
	for i := range 3 { // due in 3, 2, 1 minutes: listed in the reverse order
		due := now.Add(time.Duration(3-i) * time.Minute).UnixMilli()
		resp := signedInvoke(t, b, processtest.SendRequest("orders", 0, []byte("timed"), map[string]string{
			message.PropTimerDeliverMS: itoa(due), message.PropUniqKey: "LISTTIMER000" + strconv.Itoa(i)}), aclAlice)
		if resp.Code != remoting.Success {
			t.Fatalf("timer send %d: %d %s", i, resp.Code, resp.Remark)
		}
		ids = append(ids, resp.Field("msgId"))
	}
	list := func(fields map[string]string) *remoting.Command {
		f := map[string]string{"topic": "orders"}
		for k, v := range fields {
			f[k] = v
		}
		return remoting.NewRequest(remoting.ListTimerMessages, f, nil)
	}
	page := func(resp *remoting.Command) remoting.TimerListBody {
		t.Helper()
		if resp.Code != remoting.Success {
			t.Fatalf("list: %d %s", resp.Code, resp.Remark)
		}
		var p remoting.TimerListBody
		if err := json.Unmarshal(resp.Body, &p); err != nil {
			t.Fatalf("list body %q: %v", resp.Body, err)
		}
		return p
	}
	// The wheel takes a timer just after its send's answer: wait for all three.
	var first remoting.TimerListBody
	deadline := time.Now().Add(10 * time.Second)
	for {
		first = page(signedInvoke(t, b, list(map[string]string{"limit": "2"}), aclBob))
		if len(first.Timers) == 2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(first.Timers) != 2 || !first.More || first.Next == "" {
		t.Fatalf("first page: %+v, want 2 timers and a next", first)
	}
	second := page(signedInvoke(t, b, list(map[string]string{"limit": "2", "after": first.Next}), aclBob))
	got := append(first.Timers, second.Timers...)
	if len(got) != 3 || second.More {
		t.Fatalf("pages hold %d timers (second more %v), want 3", len(got), second.More)
	}
	for i, e := range got {
		want := ids[2-i]
		if e.OffsetMsgID != want || e.MsgID != "LISTTIMER000"+strconv.Itoa(2-i) || e.Schedule != "" || e.BodySize != 5 {
			t.Errorf("row %d: %+v, want offset msg id %s", i, e, want)
		}
		if i > 0 && e.DueMs < got[i-1].DueMs {
			t.Errorf("row %d due %d before row %d's %d", i, e.DueMs, i-1, got[i-1].DueMs)
		}
	}
	for _, c := range []struct {
		name   string
		req    *remoting.Command
		code   int32
		remark string
	}{
		{"without SUB", list(nil), remoting.NoPermission, "no SUB on topic orders"},
		{"unknown topic", remoting.NewRequest(remoting.ListTimerMessages, map[string]string{"topic": "nosuch"}, nil),
			remoting.TopicNotExist, "No topic in this broker. topic: nosuch"},
		{"limit too large", list(map[string]string{"limit": "501"}), remoting.InvalidParameter, "limit 501 outside 1..500"},
		{"negative limit", list(map[string]string{"limit": "-1"}), remoting.InvalidParameter, "limit -1 outside"},
		{"limit not a number", list(map[string]string{"limit": "ten"}), remoting.InvalidParameter, "<limit> is not a number"},
		{"bad cursor", list(map[string]string{"after": "yesterday"}), remoting.InvalidParameter, "want ms-seq"},
	} {
		creds := aclAdmin
		if c.name == "without SUB" {
			creds = aclCarol
		}
		resp := signedInvoke(t, b, c.req, creds)
		if resp.Code != c.code || !strings.Contains(resp.Remark, c.remark) || len(resp.Body) != 0 {
			t.Errorf("%s: code %d remark %q body %q, want %d with %q and no body", c.name, resp.Code, resp.Remark, resp.Body, c.code, c.remark)
		}
	}
}

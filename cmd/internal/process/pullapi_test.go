package process_test

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/actors/pipeline"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/meta"
)

// TestPullAndSendBackCodes: PULL_MESSAGE and CONSUMER_SEND_MSG_BACK, whose
// rules live in the broker API (actors/broker pull.go, sendback.go), keep
// their remoting answers: each refusal's code, a found pull's offsets and
// records, a pull at the end, the piggybacked commit, and a send-back
// that becomes a retry message the group then pulls.
func TestPullAndSendBackCodes(t *testing.T) {
	t.Parallel()
	n := processtest.Start(t, processtest.Options{Mutate: func(c *pipeline.Config) { c.AutoCreateGroup = false }})
	addr := n.BrokerAddr()
	topic, wonly, group, off := processtest.Unique("pullapi"), processtest.Unique("pullapiw"), processtest.Unique("pullapig"), processtest.Unique("pullapioff")
	for _, tc := range []struct{ name, perm string }{{topic, "6"}, {wonly, "2"}} {
		mustOK(t, "create "+tc.name, processtest.Invoke(t, addr, remoting.NewRequest(remoting.UpdateAndCreateTopic, map[string]string{
			"topic": tc.name, "readQueueNums": "2", "writeQueueNums": "2", "perm": tc.perm, "topicFilterType": "SINGLE_TAG"}, nil)))
	}
	putGroup(t, n, meta.NewSubscriptionGroupConfig(group))
	putGroup(t, n, meta.NewSubscriptionGroupConfig("processtest_reader")) // processtest.WaitQueue's (no auto-creation here)
	disabled := meta.NewSubscriptionGroupConfig(off)
	disabled.ConsumeEnable = false
	putGroup(t, n, disabled)
	mustOK(t, "send", processtest.Invoke(t, addr, processtest.SendRequest(topic, 0, []byte("one"), nil)))
	processtest.WaitQueue(t, addr, topic, 0, 1, 10*time.Second)

	pullCode := func(what string, req *remoting.Command, want int32) *remoting.Command {
		t.Helper()
		resp := processtest.Invoke(t, addr, req)
		if resp.Code != want {
			t.Fatalf("%s: code %d %q, want %d", what, resp.Code, resp.Remark, want)
		}
		return resp
	}
	pullCode("an unknown topic", processtest.PullRequest(group, "nope_"+topic, 0, 0, 8), remoting.TopicNotExist)
	pullCode("a queue past the topic's", processtest.PullRequest(group, topic, 2, 0, 8), remoting.InvalidParameter)
	pullCode("a negative queue", processtest.PullRequest(group, topic, -1, 0, 8), remoting.InvalidParameter)
	pullCode("a write-only topic", processtest.PullRequest(group, wonly, 0, 0, 8), remoting.NoPermission)
	pullCode("a group that may not consume", processtest.PullRequest(off, topic, 0, 0, 8), remoting.NoPermission)
	pullCode("an unknown group", processtest.PullRequest("nope_"+group, topic, 0, 0, 8), remoting.SubscriptionGroupNotExist)
	bad := processtest.PullRequest(group, topic, 0, 0, 8)
	bad.SetField("sysFlag", "4") // the consumer's own subscription
	bad.SetField("expressionType", "SQL92")
	bad.SetField("subscription", "a >")
	pullCode("a subscription that does not parse", bad, remoting.SubscriptionParseFailed)

	found := pullCode("a pull from 0", processtest.PullRequest(group, topic, 0, 0, 8), remoting.Success)
	recs, err := processtest.DecodeMessages(found.Body)
	if err != nil || len(recs) != 1 || string(recs[0].Body) != "one" {
		t.Fatalf("found: %d records (%v)", len(recs), err)
	}
	for k, v := range map[string]string{"nextBeginOffset": "1", "minOffset": "0", "maxOffset": "1", "suggestWhichBrokerId": "0"} {
		if found.Field(k) != v {
			t.Fatalf("found: %s = %q, want %s", k, found.Field(k), v)
		}
	}
	end := processtest.PullRequest(group, topic, 0, 1, 8)
	end.SetField("sysFlag", "1") // and commit offset 1
	end.SetField("commitOffset", "1")
	if r := pullCode("a pull at the end", end, remoting.PullNotFound); r.Field("nextBeginOffset") != "1" {
		t.Fatalf("at the end: nextBeginOffset %q", r.Field("nextBeginOffset"))
	}
	eventually(t, "the piggybacked commit", 10*time.Second, func() error {
		r := processtest.Invoke(t, addr, remoting.NewRequest(remoting.QueryConsumerOffset, map[string]string{
			"consumerGroup": group, "topic": topic, "queueId": "0"}, nil))
		if r.Code != remoting.Success || r.Field("offset") != "1" {
			return fmt.Errorf("query offset: %d %q offset %q", r.Code, r.Remark, r.Field("offset"))
		}
		return nil
	})

	sendBack := func(group string, offset int64, level string) *remoting.Command {
		return processtest.Invoke(t, addr, remoting.NewRequest(remoting.ConsumerSendMsgBack, map[string]string{
			"group": group, "offset": strconv.FormatInt(offset, 10), "delayLevel": level, "originMsgId": "", "maxReconsumeTimes": "16"}, nil))
	}
	if r := sendBack("nope_"+group, recs[0].PhysicalOffset, "0"); r.Code != remoting.SubscriptionGroupNotExist {
		t.Fatalf("send-back of an unknown group: %d %q", r.Code, r.Remark)
	}
	if r := sendBack(group, 1<<40, "0"); r.Code != remoting.SystemError {
		t.Fatalf("send-back of an offset past the log: %d %q", r.Code, r.Remark)
	}
	mustOK(t, "send-back to the dead-letter queue", sendBack(group, recs[0].PhysicalOffset, "-1"))
	dlq := meta.DLQTopic(group)
	processtest.WaitQueue(t, addr, dlq, 0, 1, 10*time.Second)
	got := pullCode("a pull of the dead-letter queue", processtest.PullRequest(group, dlq, 0, 0, 8), remoting.Success)
	if recs, err := processtest.DecodeMessages(got.Body); err != nil || len(recs) != 1 || string(recs[0].Body) != "one" || recs[0].ReconsumeTimes != 1 {
		t.Fatalf("the dead letter: %+v (%v)", recs, err)
	}
}

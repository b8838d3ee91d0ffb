package process_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// TestTransactionAndLockBadInput: malformed END_TRANSACTION, LOCK_BATCH_MQ
// and UNLOCK_BATCH_MQ requests, and a transactional batch, get a clear
// refusal; a well-formed lock afterwards is still served.
func TestTransactionAndLockBadInput(t *testing.T) {
	n := processtest.Start(t, processtest.Options{})
	topic := processtest.Unique("txbad")
	processtest.CreateTopic(t, n, topic, 2)
	end := func(fields map[string]string) *remoting.Command {
		all := map[string]string{"producerGroup": "PG", "tranStateTableOffset": "0", "commitLogOffset": "0",
			"commitOrRollback": "8", "msgId": "X", "fromTransactionCheck": "false"}
		for k, v := range fields {
			if v == "" {
				delete(all, k)
			} else {
				all[k] = v
			}
		}
		return remoting.NewRequest(remoting.EndTransaction, all, nil)
	}
	lock := func(code int32, body string) *remoting.Command { return remoting.NewRequest(code, nil, []byte(body)) }
	for _, c := range []struct {
		name   string
		req    *remoting.Command
		code   int32
		remark string
	}{
		{"end without group", end(map[string]string{"producerGroup": ""}), remoting.InvalidParameter, "producerGroup"},
		{"end without offsets", end(map[string]string{"tranStateTableOffset": "", "commitLogOffset": "x"}),
			remoting.InvalidParameter, "commitLogOffset"},
		{"end negative offset", end(map[string]string{"commitLogOffset": "-4"}), remoting.InvalidParameter, "must be >= 0"},
		{"end bad kind", end(map[string]string{"commitOrRollback": "5"}), remoting.InvalidParameter, "commitOrRollback"},
		{"end without msgId", end(map[string]string{"msgId": ""}), remoting.InvalidParameter, "msgId"},
		{"commit of nothing", end(map[string]string{"commitLogOffset": "123456789"}), remoting.SystemError,
			"Find prepared transaction message failed"},
		{"rollback of nothing", end(map[string]string{"commitOrRollback": "12"}), remoting.SystemError,
			"Find prepared transaction message failed"},
		{"lock without body", lock(remoting.LockBatchMQ, ""), remoting.InvalidParameter, "lock batch body"},
		{"lock not json", lock(remoting.LockBatchMQ, "{"), remoting.InvalidParameter, "lock batch body"},
		{"lock without client", lock(remoting.LockBatchMQ, `{"consumerGroup":"G","mqSet":[]}`), remoting.InvalidParameter,
			"clientId"},
		{"unlock bad queue", lock(remoting.UnlockBatchMQ, `{"consumerGroup":"G","clientId":"c","mqSet":[{"topic":"T","queueId":-2}]}`),
			remoting.InvalidParameter, "queueId"},
		{"transactional batch", remoting.NewRequest(remoting.SendBatchMessage, map[string]string{"a": "PG", "b": topic,
			"c": "TBW102", "d": "4", "e": "0", "f": "4", "g": "1", "h": "0", "i": "", "j": "0", "m": "true"}, []byte("x")),
			remoting.MessageIllegal, "transactional"},
	} {
		resp := processtest.Invoke(t, n.BrokerAddr(), c.req)
		if resp.Code != c.code || !strings.Contains(resp.Remark, c.remark) {
			t.Errorf("%s: code %d %q, want %d containing %q", c.name, resp.Code, resp.Remark, c.code, c.remark)
		}
	}
	// Locks live as long as the connection they were taken on: one
	// connection for both clients.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := remoting.Dial(ctx, n.BrokerAddr(), remoting.ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	invoke := func(req *remoting.Command) *remoting.Command {
		resp, err := conn.Invoke(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	mq := `[{"topic":"` + topic + `","brokerName":"broker-a","queueId":1}]`
	resp := invoke(lock(remoting.LockBatchMQ, `{"consumerGroup":"G","clientId":"c@1","mqSet":`+mq+`}`))
	if resp.Code != remoting.Success || string(resp.Body) != `{"lockOKMQSet":`+mq+`}` {
		t.Fatalf("good lock after bad input: %d %s", resp.Code, resp.Body)
	}
	resp = invoke(lock(remoting.LockBatchMQ, `{"consumerGroup":"G","clientId":"other@2","mqSet":`+mq+`}`))
	if resp.Code != remoting.Success || string(resp.Body) != `{"lockOKMQSet":[]}` {
		t.Fatalf("lock held by another client: %d %s", resp.Code, resp.Body)
	}
	if resp = invoke(lock(remoting.UnlockBatchMQ, `{"consumerGroup":"G","clientId":"c@1","mqSet":`+mq+`}`)); resp.Code != remoting.Success {
		t.Fatalf("unlock: %d %s", resp.Code, resp.Remark)
	}
	resp = invoke(lock(remoting.LockBatchMQ, `{"consumerGroup":"G","clientId":"other@2","mqSet":`+mq+`}`))
	if resp.Code != remoting.Success || string(resp.Body) != `{"lockOKMQSet":`+mq+`}` {
		t.Fatalf("lock after the holder unlocked: %d %s", resp.Code, resp.Body)
	}
}

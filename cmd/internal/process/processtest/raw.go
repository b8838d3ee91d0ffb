package processtest

// Raw remoting requests for tests that need exact control over what is
// sent and read (crash and disk-full tests): no client-side retries,
// routing or rebalancing between the test and the broker.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/message"
)

// SendRequest builds a SEND_MESSAGE (10) request for one message to
// topic/queueID with the given properties (UNIQ_KEY, TIMER_DELIVER_MS, ...;
// nil for none).
func SendRequest(topic string, queueID int32, body []byte, props map[string]string) *remoting.Command {
	return remoting.NewRequest(remoting.SendMessage, map[string]string{
		"producerGroup": "processtest", "topic": topic, "defaultTopic": "TBW102", "defaultTopicQueueNums": "4",
		"queueId": strconv.Itoa(int(queueID)), "sysFlag": "0", "bornTimestamp": strconv.FormatInt(time.Now().UnixMilli(), 10),
		"flag": "0", "properties": string(message.EncodeProperties(props)),
	}, body)
}

// PullRequest builds a PULL_MESSAGE (11) request for up to maxNums messages
// of topic/queueID from offset that is answered at once (no long polling)
// and commits nothing.
func PullRequest(group, topic string, queueID int32, offset int64, maxNums int) *remoting.Command {
	return remoting.NewRequest(remoting.PullMessage, map[string]string{
		"consumerGroup": group, "topic": topic, "queueId": strconv.Itoa(int(queueID)),
		"queueOffset": strconv.FormatInt(offset, 10), "maxMsgNums": strconv.Itoa(maxNums),
		"sysFlag": "0", "commitOffset": "0", "suspendTimeoutMillis": "0",
		"subscription": "*", "subVersion": "0", "expressionType": "TAG",
	}, nil)
}

// DecodeMessages splits a PULL_MESSAGE response body into its stored
// records, checking each one's body CRC. The records alias body.
func DecodeMessages(body []byte) ([]message.Record, error) {
	var out []message.Record
	for len(body) > 0 {
		r, n, err := message.Decode(body)
		if err != nil {
			return out, fmt.Errorf("decode pulled record %d: %w", len(out), err)
		}
		if err := message.VerifyBodyCRC(body[:n]); err != nil {
			return out, fmt.Errorf("pulled record %d: %w", len(out), err)
		}
		out = append(out, r)
		body = body[n:]
	}
	return out, nil
}

// ReadQueue pulls topic/queueID from offset 0 to its current end and
// returns every record, in queue order. A SYSTEM_BUSY answer (a broker
// still reading its POP journal after a start) is asked again until ctx
// ends.
func ReadQueue(ctx context.Context, c *remoting.Client, topic string, queueID int32) ([]message.Record, error) {
	var out []message.Record
	var offset int64
	for {
		resp, err := c.Invoke(ctx, PullRequest("processtest_reader", topic, queueID, offset, 32))
		if err != nil {
			return out, fmt.Errorf("read %s/%d at %d: %w", topic, queueID, offset, err)
		}
		switch resp.Code {
		case remoting.Success:
		case remoting.PullNotFound:
			return out, nil
		case remoting.SystemBusy:
			// A broker still reading its POP journal after a start makes
			// pulls wait (docs/pop.md, "One model at a time"): ask again
			// until ctx ends.
			select {
			case <-ctx.Done():
				return out, fmt.Errorf("read %s/%d at %d: code %d %s: %w", topic, queueID, offset, resp.Code, resp.Remark, ctx.Err())
			case <-time.After(50 * time.Millisecond):
			}
			continue
		default:
			return out, fmt.Errorf("read %s/%d at %d: code %d %s", topic, queueID, offset, resp.Code, resp.Remark)
		}
		recs, err := DecodeMessages(resp.Body)
		if err != nil {
			return out, err
		}
		if len(recs) == 0 {
			return out, errors.New("pull answered SUCCESS without messages")
		}
		out = append(out, recs...)
		next, err := strconv.ParseInt(resp.Field("nextBeginOffset"), 10, 64)
		if err != nil || next <= offset {
			return out, fmt.Errorf("read %s/%d at %d: nextBeginOffset %q", topic, queueID, offset, resp.Field("nextBeginOffset"))
		}
		offset = next
	}
}

// WaitQueue reads topic/queueID on the broker at addr until it holds at
// least n records or within passed, and returns what it read last.
func WaitQueue(t testing.TB, addr, topic string, queueID int32, n int, within time.Duration) []message.Record {
	t.Helper()
	cl, err := remoting.Dial(context.Background(), addr, remoting.ClientOptions{})
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	defer cl.Close()
	var recs []message.Record
	for deadline := time.Now().Add(within); ; time.Sleep(100 * time.Millisecond) {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		recs, err = ReadQueue(ctx, cl, topic, queueID)
		cancel()
		if len(recs) >= n || time.Now().After(deadline) {
			if err != nil && len(recs) < n {
				t.Logf("read %s/%d: %v", topic, queueID, err)
			}
			return recs
		}
	}
}

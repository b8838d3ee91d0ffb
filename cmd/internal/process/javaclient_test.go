package process_test

// Issue 16: what the Java client and mqadmin ask for beyond the Go
// client's everyday path, driven with raw frames in RocketMQ's layouts
// (the Java client's header fields, see RocketMQ's MQClientAPIImpl) and,
// where it has the feature, the official Go client.

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/message"
)

// rawClient is a remoting connection that records the requests the broker
// sends it (220, 326, ...) and answers them with code 0.
type rawClient struct {
	*remoting.Client
	mu   sync.Mutex
	got  []*remoting.Command
	seen chan struct{}
}

func dialClient(t *testing.T, addr string) *rawClient {
	t.Helper()
	rc := &rawClient{seen: make(chan struct{}, 16)}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := remoting.Dial(ctx, addr, remoting.ClientOptions{OnRequest: func(req *remoting.Command) *remoting.Command {
		rc.mu.Lock()
		rc.got = append(rc.got, req)
		rc.mu.Unlock()
		select {
		case rc.seen <- struct{}{}:
		default:
		}
		return remoting.NewResponse(req, remoting.Success, "")
	}})
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	rc.Client = c
	t.Cleanup(func() { _ = c.Close() })
	return rc
}

// waitRequest waits until the broker has sent a request with code.
func (rc *rawClient) waitRequest(t *testing.T, code int32, within time.Duration) *remoting.Command {
	t.Helper()
	deadline := time.After(within)
	for {
		rc.mu.Lock()
		for _, r := range rc.got {
			if r.Code == code {
				rc.mu.Unlock()
				return r
			}
		}
		rc.mu.Unlock()
		select {
		case <-rc.seen:
		case <-deadline:
			t.Fatalf("no request %d from the broker within %s", code, within)
		}
	}
}

// invoke sends req on the connection and returns the answer.
func (rc *rawClient) invoke(t *testing.T, req *remoting.Command) *remoting.Command {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := rc.Invoke(ctx, req)
	if err != nil {
		t.Fatalf("invoke %d: %v", req.Code, err)
	}
	return resp
}

// heartbeat registers the connection as client id with a producer group
// and, when group is set, as a clustering consumer of group on topic.
func (rc *rawClient) heartbeat(t *testing.T, id, group, topic string) {
	t.Helper()
	hb := map[string]any{"clientID": id, "producerDataSet": []map[string]string{{"groupName": id + "-pg"}}}
	if group != "" {
		hb["consumerDataSet"] = []map[string]any{{
			"groupName": group, "consumeType": "CONSUME_PASSIVELY", "messageModel": "CLUSTERING",
			"consumeFromWhere": "CONSUME_FROM_FIRST_OFFSET", "unitMode": false,
			"subscriptionDataSet": []map[string]any{{"topic": topic, "subString": "*", "tagsSet": []string{},
				"codeSet": []int{}, "subVersion": 1, "classFilterMode": false}},
		}}
	}
	body, _ := json.Marshal(hb)
	mustOK(t, "heartbeat", rc.invoke(t, remoting.NewRequest(remoting.HeartBeat, nil, body)))
}

// litePull is LITE_PULL_MESSAGE (361) as DefaultLitePullConsumer sends it:
// sysFlag = SUSPEND | SUBSCRIPTION | LITE_PULL (22), no commit offset, the
// subscription posted with the pull, suspended up to suspendMillis.
func litePull(group, topic string, queueID int32, offset int64, suspendMillis int) *remoting.Command {
	return remoting.NewRequest(remoting.LitePullMessage, map[string]string{
		"consumerGroup": group, "topic": topic, "queueId": strconv.Itoa(int(queueID)),
		"queueOffset": strconv.FormatInt(offset, 10), "maxMsgNums": "32", "sysFlag": "22",
		"commitOffset": "0", "suspendTimeoutMillis": strconv.Itoa(suspendMillis),
		"subscription": "*", "subVersion": strconv.FormatInt(time.Now().UnixMilli(), 10), "expressionType": "TAG",
		"maxMsgBytes": "2147483647", "bname": "broker-a",
	}, nil)
}

func sendRaw(t *testing.T, addr, topic string, queueID int32, bodies ...string) {
	t.Helper()
	for _, b := range bodies {
		mustOK(t, "send "+b, call(t, addr, remoting.SendMessage, processtest.SendRequest(topic, queueID, []byte(b), nil).ExtFields, []byte(b)))
	}
}

// TestLitePullMessage: 361 is served as PULL_MESSAGE is, long polling
// included: DefaultLitePullConsumer receives what is stored.
func TestLitePullMessage(t *testing.T) {
	n := processtest.Start(t, processtest.Options{})
	topic, group := processtest.Unique("lite"), processtest.Unique("litegroup")
	processtest.CreateTopic(t, n, topic, 1)
	sendRaw(t, n.BrokerAddr(), topic, 0, "m0", "m1", "m2")

	rc := dialClient(t, n.BrokerAddr())
	// A SEND_OK comes before the dispatcher made the message pullable:
	// ask again until all three are there (an empty queue answers
	// PULL_NOT_FOUND, "NO_MESSAGE_IN_QUEUE", until the first is).
	var resp *remoting.Command
	var recs []message.Record
	var err error
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		resp = rc.invoke(t, litePull(group, topic, 0, 0, 0))
		if resp.Code == remoting.PullNotFound && time.Now().Before(deadline) {
			continue
		}
		resp = mustOK(t, "lite pull", resp)
		if recs, err = processtest.DecodeMessages(resp.Body); err != nil || len(recs) >= 3 || time.Now().After(deadline) {
			break
		}
	}
	if err != nil || len(recs) != 3 || string(recs[0].Body) != "m0" || string(recs[2].Body) != "m2" {
		t.Fatalf("lite pull from 0: %d records, %v", len(recs), err)
	}
	if got := resp.Field("nextBeginOffset"); got != "3" {
		t.Fatalf("nextBeginOffset = %q, want 3", got)
	}

	// At the end of the queue it is parked and woken by the next arrival.
	type answer struct {
		resp *remoting.Command
		at   time.Time
	}
	done := make(chan answer, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		r, err := rc.Invoke(ctx, litePull(group, topic, 0, 3, 20000))
		if err != nil {
			r = remoting.NewResponse(litePull(group, topic, 0, 3, 0), -1, err.Error())
		}
		done <- answer{r, time.Now()}
	}()
	time.Sleep(300 * time.Millisecond)
	sent := time.Now()
	sendRaw(t, n.BrokerAddr(), topic, 0, "m3")
	a := <-done
	if a.resp.Code != remoting.Success {
		t.Fatalf("parked lite pull: code %d %q", a.resp.Code, a.resp.Remark)
	}
	if recs, _ := processtest.DecodeMessages(a.resp.Body); len(recs) != 1 || string(recs[0].Body) != "m3" {
		t.Fatalf("parked lite pull got %d records", len(recs))
	}
	t.Logf("parked lite pull answered %s after the send", a.at.Sub(sent).Round(time.Millisecond))

	// Its offsets are its own: UPDATE/QUERY_CONSUMER_OFFSET as the lite
	// consumer's offset store sends them.
	mustOK(t, "commit", rc.invoke(t, remoting.NewRequest(remoting.UpdateConsumerOffset,
		map[string]string{"consumerGroup": group, "topic": topic, "queueId": "0", "commitOffset": "4"}, nil)))
	q := mustOK(t, "query offset", rc.invoke(t, remoting.NewRequest(remoting.QueryConsumerOffset,
		map[string]string{"consumerGroup": group, "topic": topic, "queueId": "0"}, nil)))
	if q.Field("offset") != "4" {
		t.Fatalf("committed offset = %q, want 4", q.Field("offset"))
	}
}

// javaKeys checks a request the broker sent against the header fields the
// Java client decodes it with (testdata/java/<name>.keys): every required
// field present, none it does not know.
func javaKeys(t *testing.T, name string, req *remoting.Command) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "java", name+".keys"))
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{}
	for _, line := range strings.Fields(string(raw)) {
		k := strings.TrimPrefix(line, "!")
		known[k] = true
		if strings.HasPrefix(line, "!") && req.Field(k) == "" {
			t.Errorf("%s: required field %s missing: %v", name, k, req.ExtFields)
		}
	}
	for k := range req.ExtFields {
		if !known[k] {
			t.Errorf("%s: field %s is not in the Java header", name, k)
		}
	}
}

// javaFrame reads testdata/java/<name>.json, fills in topic and group and
// frames it as the Java client does (JSON header, no body).
func javaFrame(t *testing.T, name, topic, group string) []byte {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "java", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	hdr := strings.NewReplacer("${TOPIC}", topic, "${GROUP}", group).Replace(strings.TrimSpace(string(raw)))
	frame := binary.BigEndian.AppendUint32(nil, uint32(4+len(hdr)))
	frame = binary.BigEndian.AppendUint32(frame, uint32(len(hdr))) // serialize type 0: JSON
	return append(frame, hdr...)
}

// TestJavaGoldenFrames sends the Java client's own bytes of 361 and 300
// over a plain TCP connection and checks the answers.
func TestJavaGoldenFrames(t *testing.T) {
	n := processtest.Start(t, processtest.Options{})
	topic, group := processtest.Unique("golden"), processtest.Unique("goldengroup")
	processtest.CreateTopic(t, n, topic, 1)
	sendRaw(t, n.BrokerAddr(), topic, 0, "g0", "g1")
	mustOK(t, "commit", call(t, n.BrokerAddr(), remoting.UpdateConsumerOffset,
		map[string]string{"consumerGroup": group, "topic": topic, "queueId": "0", "commitOffset": "1"}, nil))

	conn, err := net.DialTimeout("tcp", n.BrokerAddr(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	roundTrip := func(name string) *remoting.Command {
		t.Helper()
		_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := conn.Write(javaFrame(t, name, topic, group)); err != nil {
			t.Fatal(err)
		}
		resp, err := remoting.ReadFrame(conn, 1<<20)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return resp
	}
	resp := mustOK(t, "361", roundTrip("lite_pull_361"))
	if recs, err := processtest.DecodeMessages(resp.Body); err != nil || len(recs) != 2 || resp.Opaque != 41 {
		t.Fatalf("361: %d records, opaque %d, %v", len(recs), resp.Opaque, err)
	}
	for _, k := range []string{"nextBeginOffset", "minOffset", "maxOffset", "suggestWhichBrokerId"} {
		if resp.Field(k) == "" {
			t.Errorf("361 answer lacks %s (the Java client requires it)", k)
		}
	}
	resp = mustOK(t, "300", roundTrip("query_topic_consume_by_who_300"))
	if string(resp.Body) != `{"groupList":["`+group+`"]}` {
		t.Fatalf("300 body %s", resp.Body)
	}
}

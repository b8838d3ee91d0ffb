package process_test

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/wheelmq/wheelmq/actors/pipeline"
	"github.com/wheelmq/wheelmq/actors/role"
	"github.com/wheelmq/wheelmq/cmd/internal/process"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage"
	"github.com/wheelmq/wheelmq/storage/message"
)

// instantConfirmer confirms every batch at once (a group whose replicas
// are always caught up); logEnd confirms the whole log.
type instantConfirmer struct{}

func (instantConfirmer) WaitConfirmed(_ int64, done func(bool)) { done(true) }

type logEnd struct{ st *storage.Store }

func (l logEnd) DurableEnd() int64 { return l.st.CommitLog.MaxOffset() }

// haBroker mutates a broker config into controller mode with h as its
// role and the fake stream.
func haBroker(name string, h *role.Holder) func(*pipeline.Config) {
	return func(c *pipeline.Config) {
		c.BrokerName = name
		c.Replication, c.HAListen, c.Role = pipeline.ReplicationController, "127.0.0.1:0", h
		c.StartReplication = func(env pipeline.ReplicationEnv) (*pipeline.Replication, error) {
			return &pipeline.Replication{Confirmer: instantConfirmer{}, Durable: logEnd{env.Store},
				Replicas: func() []pipeline.ReplicaLag { return []pipeline.ReplicaLag{{ReplicaID: 2, LagBytes: 42}} }}, nil
		}
	}
}

func haGet(t *testing.T, url string) string {
	t.Helper()
	resp, err := webHTTP.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func haWait(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 10 s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestFencedMasterSendsGoElsewhere: two groups in controller mode; broker-a's
// master fences itself; the official Go client's sends it refuses (14) are
// retried on broker-b and every one succeeds there; nothing is appended on
// broker-a. /healthz and the metrics say the role; a demoted broker
// re-registers with its replica id.
func TestFencedMasterSendsGoElsewhere(t *testing.T) {
	ha := role.NewHolder(role.State{Kind: role.Master, BrokerID: 0, ReplicaID: 1, Epoch: 1, SyncStateSet: []int64{1}})
	a := processtest.Start(t, processtest.Options{Mutate: haBroker("broker-a", ha), Metrics: true})
	hb := role.NewHolder(role.State{Kind: role.Master, BrokerID: 0, ReplicaID: 1, Epoch: 7, SyncStateSet: []int64{1}})
	b := processtest.Start(t, processtest.Options{Mutate: haBroker("broker-b", hb), MutateNode: func(c *process.Config) {
		c.NamesrvListen, c.NamesrvDir = "", ""
		c.Broker.NameServers = []string{a.NamesrvAddr()}
	}})
	topic := processtest.Unique("ha")
	for _, n := range []*process.Node{a, b} {
		resp := processtest.Invoke(t, n.BrokerAddr(), remoting.NewRequest(remoting.UpdateAndCreateTopic, map[string]string{
			"topic": topic, "readQueueNums": "2", "writeQueueNums": "2", "perm": "6", "topicFilterType": "SINGLE_TAG",
		}, nil))
		if resp.Code != remoting.Success {
			t.Fatalf("create topic: %d %s", resp.Code, resp.Remark)
		}
	}
	haWait(t, "route with both brokers", func() bool {
		resp := processtest.Invoke(t, a.NamesrvAddr(), remoting.NewRequest(remoting.GetRouteInfoByTopic, map[string]string{"topic": topic}, nil))
		return resp.Code == remoting.Success && strings.Contains(string(resp.Body), "broker-a") && strings.Contains(string(resp.Body), "broker-b")
	})
	p := processtest.Producer(t, a.NamesrvAddr())
	ctx := context.Background()
	// Both masters take sends once promoted (well under a second).
	haWait(t, "both promoted", func() bool {
		res, err := p.SendSync(ctx, primitive.NewMessage(topic, []byte("warm")))
		return err == nil && res.Status == primitive.SendOK
	})
	if body := haGet(t, "http://"+a.MetricsAddr()+"/healthz"); !strings.Contains(body, "role: master") || !strings.Contains(body, "epoch=1") {
		t.Fatalf("healthz %q: no master role", body)
	}
	metrics := haGet(t, "http://"+a.MetricsAddr()+"/metrics")
	for _, want := range []string{"wheelmq_ha_role 1", "wheelmq_ha_epoch 1", "wheelmq_ha_sync_state_set_size 1",
		`wheelmq_ha_replica_lag_bytes{replica="2"} 42`, "wheelmq_ha_confirmed_offset "} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %q", want)
		}
	}

	fenced := ha.Get()
	fenced.Fenced = true
	ha.Set(fenced)
	before := a.Broker().Store().CommitLog.MaxOffset()
	for i := range 20 {
		res, err := p.SendSync(ctx, primitive.NewMessage(topic, []byte(fmt.Sprintf("m%d", i))))
		if err != nil || res.Status != primitive.SendOK {
			t.Fatalf("send %d with broker-a fenced: %v %+v", i, err, res)
		}
		if res.MessageQueue.BrokerName != "broker-b" {
			t.Fatalf("send %d stored on %s, a fenced master", i, res.MessageQueue.BrokerName)
		}
	}
	if after := a.Broker().Store().CommitLog.MaxOffset(); after != before {
		t.Fatalf("fenced broker-a appended: %d -> %d", before, after)
	}
	resp := processtest.Invoke(t, a.BrokerAddr(), remoting.NewRequest(remoting.SendMessageV2, map[string]string{
		"a": "pg", "b": topic, "c": "TBW102", "d": "2", "e": "0", "f": "0", "g": "0", "h": "0", "i": "", "j": "0", "k": "false",
	}, []byte("direct")))
	if resp.Code != remoting.ServiceNotAvailable || !strings.Contains(resp.Remark, "fenced") {
		t.Fatalf("direct send to a fenced master: %d %q, want 14 ... fenced", resp.Code, resp.Remark)
	}
	if m := haGet(t, "http://"+a.MetricsAddr()+"/metrics"); !strings.Contains(m, "wheelmq_ha_role 0") {
		t.Error("fenced master: wheelmq_ha_role not 0")
	}

	// Demoted: registers with its replica id at once.
	ha.Set(role.State{Kind: role.Replica, BrokerID: 1, ReplicaID: 1, Epoch: 2, MasterAddr: b.BrokerAddr()})
	haWait(t, "broker-a registered as brokerId 1", func() bool {
		resp := processtest.Invoke(t, a.NamesrvAddr(), remoting.NewRequest(remoting.GetBrokerClusterInfo, nil, nil))
		return strings.Contains(string(resp.Body), `"broker-a":{"brokerAddrs":{"1":"`+a.BrokerAddr()+`"}`)
	})
	if body := haGet(t, "http://"+a.MetricsAddr()+"/healthz"); !strings.Contains(body, "role: replica broker_id=1") {
		t.Fatalf("healthz %q after demotion", body)
	}
}

// haSend sends one message to addr's queue 0 of topic and returns the
// answer.
func haSend(t *testing.T, addr, topic, body string) *remoting.Command {
	t.Helper()
	return processtest.Invoke(t, addr, remoting.NewRequest(remoting.SendMessageV2, map[string]string{
		"a": "pg", "b": topic, "c": "TBW102", "d": "1", "e": "0", "f": "0", "g": "0", "h": "0", "i": "", "j": "0", "k": "false",
	}, []byte(body)))
}

// TestPromotionRebuildsQueueOffsets: a replica's log holds records another
// writer (the old master) put there; once promoted, the broker hands out
// the queue offsets after them, none twice, and consumers see them all.
func TestPromotionRebuildsQueueOffsets(t *testing.T) {
	h := role.NewHolder(role.State{Kind: role.Master, BrokerID: 0, ReplicaID: 1, Epoch: 1, SyncStateSet: []int64{1}})
	n := processtest.Start(t, processtest.Options{Mutate: haBroker("broker-a", h)})
	topic := processtest.Unique("promo")
	processtest.CreateTopic(t, n, topic, 1)
	haWait(t, "promoted at epoch 1", func() bool { return haSend(t, n.BrokerAddr(), topic, "first").Code == remoting.Success })

	// Demote, then write as the old master would have (a second writer
	// on the same log: the records the receiver appends).
	h.Set(role.State{Kind: role.Replica, BrokerID: 1, ReplicaID: 1, Epoch: 1})
	if r := haSend(t, n.BrokerAddr(), topic, "refused"); r.Code != remoting.ServiceNotAvailable {
		t.Fatalf("replica took a send: %d %s", r.Code, r.Remark)
	}
	st := n.Broker().Store()
	var recs [][]byte
	for i := 1; i <= 5; i++ {
		rec := &message.Record{Topic: topic, QueueID: 0, QueueOffset: int64(i), Body: []byte(fmt.Sprintf("old-%d", i)),
			BornTimestamp: 1, StoreTimestamp: 1, Properties: message.EncodeProperties(map[string]string{})}
		b, err := rec.Encode(nil)
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, b)
	}
	if _, err := st.CommitLog.Append(recs); err != nil {
		t.Fatal(err)
	}

	began := time.Now()
	h.Set(role.State{Kind: role.Master, BrokerID: 0, ReplicaID: 1, Epoch: 2, SyncStateSet: []int64{1}})
	var resp *remoting.Command
	haWait(t, "promoted at epoch 2", func() bool {
		resp = haSend(t, n.BrokerAddr(), topic, "new")
		return resp.Code == remoting.Success
	})
	took := time.Since(began)
	if got := resp.Field("queueOffset"); got != "6" {
		t.Fatalf("first send after promotion got queue offset %s, want 6 (after the old master's 1..5)", got)
	}
	t.Logf("promotion to the first SEND_OK: %s", took)
	if took > time.Second {
		t.Errorf("promotion took %s, want well under a second", took)
	}
	haWait(t, "all 7 dispatched", func() bool {
		q := st.Queues.Lookup(topic, 0)
		return q != nil && q.MaxOffset() == 7
	})
}

// refusingConfirmer never confirms (the replicas left the sync-state set).
type refusingConfirmer struct{}

func (refusingConfirmer) WaitConfirmed(_ int64, done func(bool)) { done(false) }

// TestUnconfirmedSendIsFlushSlaveTimeout: a send its replicas do not
// confirm is answered 12, which the official Go client reports as
// SendFlushSlaveTimeout; consumers do not see it (nothing confirmed).
func TestUnconfirmedSendIsFlushSlaveTimeout(t *testing.T) {
	h := role.NewHolder(role.State{Kind: role.Master, BrokerID: 0, ReplicaID: 1, Epoch: 1, SyncStateSet: []int64{1}})
	var st *storage.Store
	n := processtest.Start(t, processtest.Options{Mutate: func(c *pipeline.Config) {
		haBroker("broker-a", h)(c)
		c.StartReplication = func(env pipeline.ReplicationEnv) (*pipeline.Replication, error) {
			st = env.Store
			return &pipeline.Replication{Confirmer: refusingConfirmer{}, Durable: fixedEnd(0)}, nil
		}
	}})
	topic := processtest.Unique("unconfirmed")
	processtest.CreateTopic(t, n, topic, 1)
	var resp *remoting.Command
	haWait(t, "promoted", func() bool {
		resp = haSend(t, n.BrokerAddr(), topic, "x")
		return resp.Code != remoting.ServiceNotAvailable
	})
	if resp.Code != remoting.FlushSlaveTimeout {
		t.Fatalf("unconfirmed send: %d %q, want 12", resp.Code, resp.Remark)
	}
	p := processtest.Producer(t, n.NamesrvAddr())
	res, err := p.SendSync(context.Background(), primitive.NewMessage(topic, []byte("y")))
	if err != nil || res.Status != primitive.SendFlushSlaveTimeout {
		t.Fatalf("Go client: %v %+v, want SendFlushSlaveTimeout", err, res)
	}
	time.Sleep(100 * time.Millisecond)
	if q := st.Queues.Lookup(topic, 0); q != nil && q.MaxOffset() != 0 {
		t.Fatalf("%d unconfirmed messages visible to consumers", q.MaxOffset())
	}
}

type fixedEnd int64

func (f fixedEnd) DurableEnd() int64 { return int64(f) }

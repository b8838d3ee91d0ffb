package txcheck

import (
	"fmt"
	"net/netip"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/clients"
	"github.com/wheelmq/wheelmq/actors/dispatch"
	"github.com/wheelmq/wheelmq/actors/stage"
	"github.com/wheelmq/wheelmq/actors/supervisor"
	"github.com/wheelmq/wheelmq/actors/timer"
	"github.com/wheelmq/wheelmq/actors/writer"
	"github.com/wheelmq/wheelmq/storage"
	"github.com/wheelmq/wheelmq/storage/message"
	"github.com/wheelmq/wheelmq/storage/meta"
)

const wait = 10 * time.Second

var host = netip.MustParseAddrPort("10.0.0.9:10911")

// rig runs a real store with the writer, dispatch and transaction stages;
// the clients stage is replaced by a recorder that plays the producers.
type rig struct {
	t       *testing.T
	dir     string
	st      *storage.Store
	sys     *actor.ActorSystem
	reg     *stage.Registry
	strat   *supervisor.Strategy
	w, d    *stage.Stage
	tx      *stage.Stage
	kicker  *Kicker
	dkicker *dispatch.Kicker
	metrics *Metrics
	opts    Options

	mu       sync.Mutex
	checks   []clients.CheckTransaction
	online   bool     // a producer takes checks
	ensured  []string // topics EnsureTopic was called for
	halfSent int
}

func newRig(t *testing.T, dir string, edit func(*Options)) *rig {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	st, err := storage.Open(dir, storage.Options{SegmentSize: 4 << 20})
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, dir: dir, st: st, sys: stage.NewSystem(zerolog.Nop()), online: true}
	r.reg = stage.NewRegistry(prometheus.NewRegistry())
	r.strat = supervisor.New(supervisor.Policy{Initial: time.Millisecond, Max: 2 * time.Millisecond})
	r.kicker, r.dkicker = &Kicker{}, &dispatch.Kicker{}
	st.Dispatched.Store(dispatch.StartOffset(st, zerolog.Nop()))
	r.d = r.spawn(dispatch.StageName, dispatch.Producer(dispatch.Options{Store: st, Notify: func(a []dispatch.Arrival) {
		for _, q := range a {
			if q.Topic == meta.TopicTransHalf {
				r.kicker.Kick()
			}
		}
	}}, r.dkicker))
	r.w = r.spawn(writer.StageName, writer.Producer(writer.Options{Store: st, Appended: r.dkicker.Kick}))
	r.dkicker.Kick()
	r.metrics = NewMetrics(prometheus.NewRegistry())
	r.opts = Options{
		Store: st, StatePath: st.TransactionsPath(), BrokerName: "broker-t",
		Append: func(a *writer.Append) { r.w.Send(a) },
		ToProducer: func(m *clients.SendToProducer) {
			r.mu.Lock()
			id := ""
			if r.online {
				id = "producer@1"
				r.checks = append(r.checks, m.Request.(clients.CheckTransaction))
			}
			r.mu.Unlock()
			m.Reply(id)
		},
		EnsureTopic: func(name string) {
			r.mu.Lock()
			r.ensured = append(r.ensured, name)
			r.mu.Unlock()
		},
		Timer:   timer.Limits{Enabled: true, MaxDelay: time.Hour},
		Timeout: time.Hour, CheckInterval: time.Hour, MaxChecks: 15, Tick: 10 * time.Millisecond,
		Kicker: r.kicker, Watermark: NewWatermark(), Metrics: r.metrics,
	}
	if edit != nil {
		edit(&r.opts)
	}
	r.startTx()
	t.Cleanup(r.close)
	return r
}

func (r *rig) spawn(name string, p stage.Producer) *stage.Stage {
	r.t.Helper()
	s, err := r.reg.Spawn(r.sys, r.strat, name, p)
	if err != nil {
		r.t.Fatal(err)
	}
	return s
}

func (r *rig) startTx() {
	r.tx = r.spawn(StageName, Producer(r.opts))
	r.kicker.Kick()
}

// stopTx stops the transaction stage (it persists its state).
func (r *rig) stopTx() { r.tx.Stop() }

func (r *rig) close() {
	if r.sys == nil {
		return
	}
	r.tx.Stop()
	r.w.Stop()
	r.d.Stop()
	r.sys.Shutdown()
	_ = r.st.Close()
	r.sys = nil
}

// appendRaw stores records through the writer and returns their offsets.
func (r *rig) appendRaw(key writer.QueueKey, recs ...[]byte) writer.Result {
	r.t.Helper()
	ch := make(chan writer.Result, 1)
	r.w.Send(&writer.Append{Key: key, Records: recs, Reply: func(res writer.Result) { ch <- res }})
	select {
	case res := <-ch:
		if res.Err != nil {
			r.t.Fatalf("append: %v", res.Err)
		}
		return res
	case <-time.After(wait):
		r.t.Fatal("append not answered")
		return writer.Result{}
	}
}

// sent is a half message as a producer got it back.
type sent struct {
	uniq        string
	halfOffset  int64
	commitLog   int64
	group, body string
}

// sendHalf stores a half message for topic/queue like the send path does.
func (r *rig) sendHalf(group, topic string, queue int32, extra map[string]string) sent {
	r.t.Helper()
	r.mu.Lock()
	r.halfSent++
	n := r.halfSent
	r.mu.Unlock()
	uniq := fmt.Sprintf("UNIQ%04d", n)
	props := map[string]string{message.PropTranMsg: "true", message.PropProducerGroup: group, message.PropUniqKey: uniq,
		message.PropRealTopic: topic, message.PropRealQueueID: strconv.Itoa(int(queue)), message.PropTransactionID: uniq,
		message.PropTags: "tag"}
	for k, v := range extra {
		props[k] = v
	}
	body := fmt.Sprintf("body-%d", n)
	rec := &message.Record{Flag: 7, BornTimestamp: time.Now().UnixMilli(), BornHost: netip.MustParseAddrPort("10.0.0.1:5000"),
		StoreTimestamp: time.Now().UnixMilli(), StoreHost: host, Body: []byte(body), Topic: meta.TopicTransHalf,
		Properties: message.EncodeProperties(props)}
	enc, err := rec.Encode(nil)
	if err != nil {
		r.t.Fatal(err)
	}
	res := r.appendRaw(writer.QueueKey{Topic: meta.TopicTransHalf}, enc)
	return sent{uniq: uniq, halfOffset: res.QueueOffset, commitLog: res.Offsets[0], group: group, body: body}
}

// end sends END_TRANSACTION and returns the answer.
func (r *rig) end(s sent, commit bool) (int32, string) {
	r.t.Helper()
	return r.endWith(&End{ProducerGroup: s.group, HalfOffset: s.halfOffset, CommitLogOffset: s.commitLog, Commit: commit})
}

func (r *rig) endWith(e *End) (int32, string) {
	r.t.Helper()
	type answer struct {
		code   int32
		remark string
	}
	ch := make(chan answer, 1)
	e.Reply = func(code int32, remark string) { ch <- answer{code, remark} }
	r.tx.Send(e)
	select {
	case a := <-ch:
		return a.code, a.remark
	case <-time.After(wait):
		r.t.Fatal("END_TRANSACTION not answered")
		return 0, ""
	}
}

// records returns the decoded records of a consume queue, once dispatch
// caught up with the CommitLog.
func (r *rig) records(topic string, queue int32) []message.Record {
	r.t.Helper()
	r.waitDispatched()
	q := r.st.Queues.Lookup(topic, queue)
	if q == nil {
		return nil
	}
	units, err := q.Read(q.MinOffset(), 1000)
	if err != nil {
		r.t.Fatal(err)
	}
	var out []message.Record
	for _, raw := range storage.ReadUnits(r.st.CommitLog, units) {
		rec, _, err := message.Decode(raw)
		if err != nil {
			r.t.Fatal(err)
		}
		out = append(out, rec)
	}
	return out
}

func (r *rig) waitDispatched() {
	r.t.Helper()
	deadline := time.Now().Add(wait)
	for r.st.Dispatched.Load() < r.st.CommitLog.MaxOffset() {
		if time.Now().After(deadline) {
			r.t.Fatal("dispatch did not catch up")
		}
		r.dkicker.Kick()
		time.Sleep(time.Millisecond)
	}
}

// open returns the open transactions' half offsets (a barrier through the
// stage's mailbox: the state it persists on demand).
func (r *rig) open() map[int64]int32 {
	r.t.Helper()
	ch := make(chan map[int64]int32, 1)
	r.tx.Send(inspect{reply: func(s *Stage) {
		m := map[int64]int32{}
		for q, tx := range s.pending {
			m[q] = tx.checks
		}
		ch <- m
	}})
	select {
	case m := <-ch:
		return m
	case <-time.After(wait):
		r.t.Fatal("inspect not answered")
		return nil
	}
}

// waitFor polls cond until it holds or the deadline passes.
func (r *rig) waitFor(what string, cond func() bool) {
	r.t.Helper()
	deadline := time.Now().Add(wait)
	for !cond() {
		if time.Now().After(deadline) {
			r.t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func (r *rig) checkRequests() []clients.CheckTransaction {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]clients.CheckTransaction(nil), r.checks...)
}

func (r *rig) ends(outcome string) float64 {
	return counter(r.t, r.metrics.Ends.WithLabelValues(outcome))
}

func counter(t *testing.T, c prometheus.Metric) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	if m.Counter != nil {
		return m.Counter.GetValue()
	}
	return m.Gauge.GetValue()
}

package netloop_test

// The broker's per-connection bounds, through the real router and stages
// on fake connections: unanswered requests of every kind, and answers the
// client has not read.

import (
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/broker"
	"github.com/wheelmq/wheelmq/actors/pipeline"
	"github.com/wheelmq/wheelmq/netloop"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/netloop/router"
	"github.com/wheelmq/wheelmq/storage/message"
)

// boundsBroker is a broker behind fake connections whose answers are
// decoded (answers).
type boundsBroker struct {
	pipe   *pipeline.Pipeline
	router *router.Router
	srv    *netloop.Server
	opaque int32
}

func newBoundsBroker(t *testing.T, mutate func(*pipeline.Config)) *boundsBroker {
	t.Helper()
	cfg := pipeline.DefaultConfig()
	cfg.DataDir, cfg.Listen, cfg.Logger = t.TempDir(), "127.0.0.1:0", zerolog.Nop()
	cfg.WriterBatch = router.NewBatch
	mutate(&cfg)
	pipe, err := pipeline.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pipe.Close() })
	core := broker.New(pipe)
	r := router.New(core)
	adv := netip.MustParseAddrPort("127.0.0.1:10911")
	core.Serve(adv, message.NewUniqKeyGenerator(adv.Addr(), 1, 1))
	return &boundsBroker{pipe: pipe, router: r, srv: netloop.NewServer(netloop.Config{Name: "bounds"}, r)}
}

// conn opens a fake connection.
func (b *boundsBroker) conn(t *testing.T) (*netloop.FakeConn, answers) {
	t.Helper()
	a := make(answers, 64)
	fc := netloop.NewFakeConn(b.srv, -1, a.onWrite)
	t.Cleanup(fc.Shutdown)
	return fc, a
}

// feed sends one request on fc.
func (b *boundsBroker) feed(t *testing.T, fc *netloop.FakeConn, cmd *remoting.Command) {
	t.Helper()
	b.opaque++
	cmd.Opaque = b.opaque
	f, err := remoting.EncodeFrame(cmd)
	if err != nil {
		t.Fatal(err)
	}
	fc.Feed(f)
}

func maxOffsetReq(topic string) *remoting.Command {
	return remoting.NewRequest(remoting.GetMaxOffset, map[string]string{"topic": topic, "queueId": "0"}, nil)
}

func longPollReq(topic string, offset int64) *remoting.Command {
	return remoting.NewRequest(remoting.PullMessage, map[string]string{
		"consumerGroup": "g", "topic": topic, "queueId": "0", "queueOffset": strconv.FormatInt(offset, 10),
		"maxMsgNums": "32", "sysFlag": "2", "commitOffset": "0", "suspendTimeoutMillis": "30000",
	}, nil)
}

func plainSendReq(topic, body string) *remoting.Command {
	return remoting.NewRequest(remoting.SendMessage, map[string]string{
		"producerGroup": "p", "topic": topic, "queueId": "0", "sysFlag": "0", "bornTimestamp": "1", "flag": "0",
		"properties": string(message.AppendProperty(nil, "KEYS", "k")),
	}, []byte(body))
}

func wantCode(t *testing.T, what string, got *remoting.Command, code int32, remark string) {
	t.Helper()
	if got.Code != code || !strings.Contains(got.Remark, remark) {
		t.Fatalf("%s: code %d %q, want %d with %q", what, got.Code, got.Remark, code, remark)
	}
}

// TestUnansweredRequestsBoundedPerConnection parks long polls up to the
// connection's bound on unanswered requests: past it every kind of request
// is refused with SYSTEM_BUSY (plain sends too), other connections are
// served, and once the parked pulls are answered the connection is served
// again. Every request counted is taken off once answered, oneway ones and
// those that get no answer included.
func TestUnansweredRequestsBoundedPerConnection(t *testing.T) {
	b := newBoundsBroker(t, func(c *pipeline.Config) { c.MaxInflightPerConn = 3 })
	a, aa := b.conn(t)
	other, oa := b.conn(t)
	b.feed(t, a, remoting.NewRequest(remoting.UpdateAndCreateTopic, map[string]string{
		"topic": "T", "readQueueNums": "1", "writeQueueNums": "1", "perm": "6"}, nil))
	wantCode(t, "create topic", aa.next(t), remoting.Success, "")
	for range 3 {
		b.feed(t, a, longPollReq("T", 0))
	}
	for _, req := range []*remoting.Command{maxOffsetReq("T"), plainSendReq("T", "refused"),
		remoting.NewRequest(remoting.HeartBeat, nil, []byte(`{"clientID":"c"}`))} {
		b.feed(t, a, req)
		wantCode(t, "code "+strconv.Itoa(int(req.Code))+" past the bound", aa.next(t), remoting.SystemBusy, "[TOO_MANY_REQUESTS]")
	}
	b.feed(t, other, maxOffsetReq("T"))
	wantCode(t, "another connection", oa.next(t), remoting.Success, "")
	b.feed(t, other, plainSendReq("T", "wakes them"))
	wantCode(t, "send on another connection", oa.next(t), remoting.Success, "")
	for i := range 3 {
		wantCode(t, "woken long poll "+strconv.Itoa(i), aa.next(t), remoting.Success, "FOUND")
	}
	b.feed(t, a, maxOffsetReq("T"))
	if got := aa.next(t); got.Code != remoting.Success || got.Field("offset") != "1" {
		t.Fatalf("after the answers: code %d %q offset %s", got.Code, got.Remark, got.Field("offset"))
	}
	// Requests that get no answer: oneway, and END_TRANSACTION of unknown state.
	upd := remoting.NewRequest(remoting.UpdateConsumerOffset, map[string]string{
		"consumerGroup": "g", "topic": "T", "queueId": "0", "commitOffset": "1"}, nil)
	upd.Flag |= remoting.FlagOneway
	b.feed(t, a, upd)
	b.feed(t, a, remoting.NewRequest(remoting.EndTransaction, map[string]string{"producerGroup": "p",
		"tranStateTableOffset": "0", "commitLogOffset": "0", "commitOrRollback": "0", "msgId": "x"}, nil))
	b.feed(t, a, maxOffsetReq("T")) // answered after the two above were handled
	wantCode(t, "last", aa.next(t), remoting.Success, "")
	if n := b.router.Unanswered(); n != 0 {
		t.Fatalf("%d requests still counted as unanswered after every answer", n)
	}
}

// TestCongestedConnectionIsRefused refuses every request of a connection
// whose buffered output is above the soft cap (here gnet holds 64 MiB the
// client has not read), the plain-send hot path included, while another
// connection is served; once the output drained it is served again.
func TestCongestedConnectionIsRefused(t *testing.T) {
	b := newBoundsBroker(t, func(*pipeline.Config) {})
	a, aa := b.conn(t)
	other, oa := b.conn(t)
	b.feed(t, a, remoting.NewRequest(remoting.UpdateAndCreateTopic, map[string]string{
		"topic": "T", "readQueueNums": "1", "writeQueueNums": "1", "perm": "6"}, nil))
	wantCode(t, "create topic", aa.next(t), remoting.Success, "")
	a.SetOutbound(64 << 20)
	for _, req := range []*remoting.Command{maxOffsetReq("T"), plainSendReq("T", "refused"), longPollReq("T", 0)} {
		b.feed(t, a, req)
		wantCode(t, "code "+strconv.Itoa(int(req.Code))+" while congested", aa.next(t), remoting.SystemBusy, "[OUTPUT_FULL]")
	}
	if !a.NetConn().Congested() || b.srv.Stats().OutputBuffered < 64<<20 {
		t.Fatalf("congested %v, server gauge %d", a.NetConn().Congested(), b.srv.Stats().OutputBuffered)
	}
	b.feed(t, other, plainSendReq("T", "served"))
	wantCode(t, "send on another connection", oa.next(t), remoting.Success, "")
	a.SetOutbound(0)
	deadline := time.Now().Add(5 * time.Second)
	for {
		b.feed(t, a, maxOffsetReq("T"))
		got := aa.next(t)
		wantCode(t, "after draining", got, remoting.Success, "")
		if off := got.Field("offset"); off != "0" { // dispatched
			if off != "1" {
				t.Fatalf("queue holds %s messages, want 1 (the refused send must not be stored)", off)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the served send never reached the queue")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if n := b.router.Unanswered(); n != 0 {
		t.Fatalf("%d requests still counted as unanswered", n)
	}
}

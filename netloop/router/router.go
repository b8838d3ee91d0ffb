// Package router serves a broker's remoting port. Its code runs on the
// gnet event loops (netloop): for each request it parses and validates the
// header and body, refuses at once what cannot be served, and hands the
// rest to the supervised stages of actors/pipeline, which answer through
// Conn.Send. Nothing here blocks: no file I/O, no waiting on a stage.
//
// One file per request family, in the style of franz-go's kfake:
// send.go (SEND_MESSAGE, V2, batch, reply variants: a codec over the broker
// API, actors/broker, which holds the send rules) with fastsend.go (the
// plain-send hot path) and reply.go (the push of a reply to its
// requester), pull.go (PULL_MESSAGE, LITE_PULL_MESSAGE and the offset
// family), clientreq.go (heartbeat, unregister, consumer list), admin.go
// (topics), orderly.go (LOCK_BATCH_MQ, UNLOCK_BATCH_MQ), transaction.go
// (END_TRANSACTION and the half-message send path), sendback.go
// (CONSUMER_SEND_MSG_BACK, over the broker API's SendBack), timercancel.go (the admin cancel of a timer
// message), groups.go (subscription groups), adminstats.go (topic and
// consume stats, earliest store time), adminruntime.go (broker runtime
// info), adminclients.go (connection lists, consumer running info, offset
// reset), brokerconfig.go (GET_BROKER_CONFIG, UPDATE_BROKER_CONFIG, over
// broker.Config and broker.UpdateConfig, whose keys are in
// actors/broker/configkeys.go), authadmin.go (ACL 2.0 users and policies,
// 3001-3010, over the broker API's ACL calls); adminroutes.go holds the admin handlers' table. header.go reads header fields; refusal.go is the one typed answer
// every handler gives when it refuses.
//
// Every handler returns a *Refusal: nil when the work went to a stage (the
// stage answers), else the code and remark the client gets. The router
// also refuses, before the handler runs, a request that needs a stage that
// was stopped for good (SYSTEM_ERROR naming the stage and its cause), and
// one its connection has no room for (SYSTEM_BUSY, see admit): too many
// of its requests wait for an answer, or it has not read the answers it
// was sent. With an ACL (authz.go), a request that is not signed by an
// account with what it needs is refused before its handler runs
// (NO_PERMISSION); so is, on the hot path, a plain send.
//
// Every request is counted against its connection from the moment it is
// read until it is answered: each answer goes through sendVia (or, for a
// request that gets none, settle), which takes it off the count.
package router

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/broker"
	"github.com/wheelmq/wheelmq/actors/clients"
	"github.com/wheelmq/wheelmq/actors/dispatch"
	"github.com/wheelmq/wheelmq/actors/groups"
	"github.com/wheelmq/wheelmq/actors/index"
	"github.com/wheelmq/wheelmq/actors/offsets"
	"github.com/wheelmq/wheelmq/actors/pipeline"
	"github.com/wheelmq/wheelmq/actors/pop"
	"github.com/wheelmq/wheelmq/actors/pull"
	"github.com/wheelmq/wheelmq/actors/recovery"
	"github.com/wheelmq/wheelmq/actors/stage"
	"github.com/wheelmq/wheelmq/actors/topics"
	"github.com/wheelmq/wheelmq/actors/txcheck"
	"github.com/wheelmq/wheelmq/actors/writer"
	"github.com/wheelmq/wheelmq/netloop"
	"github.com/wheelmq/wheelmq/netloop/auth"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage"
)

// Router is the netloop.Handler of a broker port.
type Router struct {
	p   *pipeline.Pipeline
	cfg *pipeline.Config
	log zerolog.Logger

	store     *storage.Store
	topicView *topics.View
	groupView *groups.View
	subView   *clients.View
	resets    *offsets.ResetView
	pullSt    *stage.Stage
	offsetsSt *stage.Stage
	clientsSt *stage.Stage
	topicsSt  *stage.Stage
	groupsSt  *stage.Stage

	core    *broker.Broker // the broker's API: the codec calls it
	backlog *atomic.Int64  // appends sent to the writer and not answered (the broker's count)
	m       *routerMetrics
	panics  *prometheus.CounterVec // wheelmq_handler_panics_total (recover.go)
	routes  map[int32]route        // the handler table with its stages resolved
	filters *pull.FilterCache
	indexSt *stage.Stage
	appends *writer.Inbox // the commitlog writer's inbox
	sends   sendPool      // the hot path's requests (fastsend.go)
	conns   sync.Map      // connection id -> *connState of the open connections
	guard   *auth.Guard   // the ACL (authz.go); nil: off
	lite    liteConns     // the lite subscriptions made per connection (lite.go)
}

// route is a handler with the stages it needs, resolved once.
type route struct {
	serve func(r *Router, c *netloop.Conn, cmd *remoting.Command) *Refusal
	needs []*stage.Stage
}

var (
	_ netloop.Handler      = (*Router)(nil)
	_ netloop.FrameHandler = (*Router)(nil)
)

// New returns the remoting codec of core, with no ACL (NewGuarded).
// Requests are refused with SYSTEM_BUSY until core.Serve is called.
func New(core *broker.Broker) *Router { return NewGuarded(core, nil) }

// NewGuarded returns the remoting codec of core whose requests g checks
// (their signatures and permissions; nil: no ACL, every request is
// served). Requests are refused with SYSTEM_BUSY until core.Serve is
// called.
func NewGuarded(core *broker.Broker, g *auth.Guard) *Router {
	p := core.Pipeline()
	r := &Router{
		core: core, p: p, cfg: p.Config(), log: p.Config().Logger,
		store: p.Store(), topicView: p.Topics(), groupView: p.Groups(), subView: p.Subscriptions(), resets: p.Resets(),
		pullSt:    p.Stage(pull.StageName),
		offsetsSt: p.Stage(offsets.StageName), clientsSt: p.Stage(clients.StageName),
		topicsSt: p.Stage(topics.StageName), filters: pull.NewFilterCache(0), indexSt: p.Stage(index.StageName),
		groupsSt: p.Stage(groups.StageName),
	}
	if g != nil {
		// The ACL 2.0 users (actors/acl) are accounts too, asked first.
		r.guard = g.ForPort("broker", p.ACL())
	}
	r.m = newRouterMetrics(r)
	r.panics = recovery.Counter(r.cfg.Registerer)
	r.routes = make(map[int32]route, len(handlers))
	for code, h := range handlers {
		r.routes[code] = route{serve: h.serve, needs: r.resolve(h.needs)}
	}
	r.appends = p.Appends()
	r.backlog = core.WriterBacklog()
	core.ServeResets(r.announceReset)
	return r
}

// resolve looks stages up by name (names without a stage are skipped).
func (r *Router) resolve(names []string) []*stage.Stage {
	var out []*stage.Stage
	for _, name := range names {
		if s := r.p.Stage(name); s != nil {
			out = append(out, s)
		}
	}
	return out
}

// connState is the router's per-connection state.
type connState struct {
	// inflight counts the connection's requests, of every kind, read and
	// not yet answered (parked long polls included); see admit.
	inflight atomic.Int64
	// busy is the pulls' Request.Busy of the connection (busyRemark),
	// made once.
	busy func() string
	// The hot path's scratch, used on the connection's event loop only.
	view   remoting.HeaderView
	props  []byte
	kicked bool           // a plain send of this read woke the writer
	acl    auth.ViewCache // the hot path's ACL scratch
}

// OnOpen implements netloop.Handler.
func (r *Router) OnOpen(c *netloop.Conn) {
	cs := &connState{busy: busyRemark(c)}
	c.SetContext(cs)
	r.conns.Store(c.ID(), cs)
	r.log.Debug().Str("remote", c.RemoteAddr()).Uint64("conn", c.ID()).Msg("connection opened")
}

// OnClose implements netloop.Handler.
func (r *Router) OnClose(c *netloop.Conn, err error) {
	r.conns.Delete(c.ID())
	r.clientsSt.Send(&clients.Closed{ConnID: c.ID()})
	r.liteConnClosed(c.ID()) // lite.go
	ev := r.log.Debug().Str("remote", c.RemoteAddr()).Uint64("conn", c.ID())
	if err != nil {
		ev = ev.Err(err)
	}
	ev.Msg("connection closed")
}

// handler serves one request code.
type handler struct {
	serve func(r *Router, c *netloop.Conn, cmd *remoting.Command) *Refusal
	// needs lists the stages without which the request cannot be served.
	needs []string
}

var handlers = map[int32]handler{
	remoting.SendMessage:                {(*Router).handleSend, []string{writer.StageName}},
	remoting.SendMessageV2:              {(*Router).handleSend, []string{writer.StageName}},
	remoting.SendBatchMessage:           {(*Router).handleSend, []string{writer.StageName}},
	remoting.SendReplyMessage:           {(*Router).handleSend, []string{writer.StageName}},
	remoting.SendReplyMessageV2:         {(*Router).handleSend, []string{writer.StageName}},
	remoting.PullMessage:                {(*Router).handlePull, []string{pull.StageName, dispatch.StageName}},
	remoting.LitePullMessage:            {(*Router).handlePull, []string{pull.StageName, dispatch.StageName}},
	remoting.PopMessage:                 {(*Router).handlePop, []string{pop.StageName, dispatch.StageName}},
	remoting.AckMessage:                 {(*Router).handleAck, []string{pop.StageName}},
	remoting.ChangeMessageInvisibleTime: {(*Router).handleChangeInvisible, []string{pop.StageName}},
	remoting.BatchAckMessage:            {(*Router).handleBatchAck, []string{pop.StageName}},
	remoting.PeekMessage:                {(*Router).handlePeek, []string{pop.StageName}},
	remoting.Notification:               {(*Router).handleNotification, []string{pop.StageName, dispatch.StageName}},
	remoting.PollingInfo:                {(*Router).handlePollingInfo, []string{pop.StageName}},
	remoting.PopLiteMessage:             {(*Router).handlePopLite, nil},
	remoting.LiteSubscriptionCtl:        {(*Router).handleLiteSubscriptionCtl, nil},
	remoting.SetMessageRequestMode:      {(*Router).handleSetRequestMode, nil},
	remoting.QueryAssignment:            {(*Router).handleQueryAssignment, []string{clients.StageName}},
	remoting.QueryConsumerOffset:        {(*Router).handleQueryOffset, []string{offsets.StageName}},
	remoting.UpdateConsumerOffset:       {(*Router).handleUpdateOffset, []string{offsets.StageName}},
	remoting.GetMaxOffset:               {(*Router).handleQueueBounds, nil},
	remoting.GetMinOffset:               {(*Router).handleQueueBounds, nil},
	remoting.SearchOffsetByTimestamp:    {(*Router).handleSearchOffset, []string{pull.StageName}},
	remoting.HeartBeat:                  {(*Router).handleHeartbeat, []string{clients.StageName}},
	remoting.UnregisterClient:           {(*Router).handleUnregister, []string{clients.StageName}},
	remoting.GetConsumerListByGroup:     {(*Router).handleConsumerList, []string{clients.StageName}},
	remoting.EndTransaction:             {(*Router).handleEndTransaction, []string{txcheck.StageName, writer.StageName}},
	remoting.LockBatchMQ:                {(*Router).handleLockBatch, []string{clients.StageName}},
	remoting.UnlockBatchMQ:              {(*Router).handleUnlockBatch, []string{clients.StageName}},
	remoting.UpdateAndCreateTopic:       {(*Router).handleCreateTopic, []string{topics.StageName}},
	remoting.DeleteTopicInBroker:        {(*Router).handleDeleteTopic, []string{topics.StageName, offsets.StageName}},
	remoting.GetAllTopicConfig:          {(*Router).handleAllTopicConfig, nil},
	remoting.ConsumerSendMsgBack:        {(*Router).handleSendBack, []string{pull.StageName, writer.StageName}},
	remoting.CancelTimerMessage:         {(*Router).handleCancelTimer, []string{pull.StageName, writer.StageName}},
	remoting.ListTimerMessages:          {(*Router).handleListTimers, []string{pull.StageName}},
	remoting.RecallMessage:              {(*Router).handleRecall, []string{writer.StageName}},
	remoting.CheckClientConfig:          {(*Router).handleCheckClientConfig, nil},
	remoting.QueryMessage:               {(*Router).handleQueryMessage, []string{index.StageName}},
	remoting.ViewMessageByID:            {(*Router).handleViewMessage, []string{index.StageName}},
}

// OnCommand implements netloop.Handler.
func (r *Router) OnCommand(c *netloop.Conn, cmd *remoting.Command) {
	if cmd.IsResponse() {
		// Answers to requests the broker sent a client (GET_CONSUMER_RUNNING_INFO
		// relayed by the clients stage); others are dropped there.
		r.clientsSt.Send(clientAnswer(c.ID(), cmd))
		return
	}
	// Counted until its answer (or settle): the refusals below included.
	n := connStateOf(c).inflight.Add(1)
	// A panic from here on is this request's failure alone (recover.go).
	defer r.recoverRequest(c, cmd)
	if !r.core.Ready() {
		// Listening starts before the advertised address (which may depend
		// on the bound port) is known; requests in that window are refused.
		r.refuse(c, cmd, &Refusal{Code: remoting.SystemBusy, Remark: "[STARTING]broker is starting, try again"})
		return
	}
	r.m.received(cmd.Code)
	if ref := r.admit(c, n); ref != nil {
		r.refuse(c, cmd, ref)
		return
	}
	if ref := r.authorize(c, cmd); ref != nil {
		r.refuse(c, cmd, ref)
		return
	}
	h, ok := r.routes[cmd.Code]
	if !ok {
		r.refuse(c, cmd, refuse(remoting.RequestCodeNotSupported, " request type %d not supported", cmd.Code))
		return
	}
	if ref := r.stagesDown(h.needs); ref != nil {
		r.refuse(c, cmd, ref)
		return
	}
	if ref := h.serve(r, c, cmd); ref != nil {
		r.refuse(c, cmd, ref)
	}
}

// admit refuses a request its connection has no room for (n counts it
// with the connection's other unanswered requests): backpressure by
// refusing, per connection, for requests of every kind. The plain-send
// hot path (fastsend.go) declines such requests to the general path, which
// refuses them here.
func (r *Router) admit(c *netloop.Conn, n int64) *Refusal {
	if max := r.p.Settings().MaxInflightPerConn; n > max {
		return refuse(remoting.SystemBusy, "[TOO_MANY_REQUESTS]%d requests of this connection wait for an answer (at most %d): wait for answers before sending more",
			n-1, max)
	}
	if c.Congested() {
		return refuse(remoting.SystemBusy, "[OUTPUT_FULL]this connection has %d bytes of answers it has not read: read them before asking for more",
			c.OutputBuffered())
	}
	return nil
}

// busyRemark is a pull's Request.Busy: the remark of its SYSTEM_BUSY answer
// while the connection has too many answers unread.
func busyRemark(c *netloop.Conn) func() string {
	return func() string {
		if !c.Congested() {
			return ""
		}
		return fmt.Sprintf("[OUTPUT_FULL]this connection has %d bytes of answers it has not read: read them before pulling more",
			c.OutputBuffered())
	}
}

// stagesDown refuses a request that needs a stage stopped for good.
func (r *Router) stagesDown(needs []*stage.Stage) *Refusal {
	for _, s := range needs {
		if d := s.Down(); d != nil {
			return refuse(remoting.SystemError, "[STAGE_DOWN]%v", d)
		}
	}
	return nil
}

// refuse answers cmd with a refusal (unless it is oneway) and counts it.
func (r *Router) refuse(c *netloop.Conn, cmd *remoting.Command, ref *Refusal) {
	r.m.refused(ref.Code)
	r.log.Debug().Str("remote", c.RemoteAddr()).Int32("request_code", cmd.Code).Int32("code", ref.Code).
		Str("remark", ref.Remark).Msg("request refused")
	r.send(c, cmd, remoting.NewResponse(cmd, ref.Code, ref.Remark))
}

// reply answers cmd with a bare code and remark (unless it is oneway).
func (r *Router) reply(c *netloop.Conn, cmd *remoting.Command, code int32, remark string) {
	r.send(c, cmd, remoting.NewResponse(cmd, code, remark))
}

// failWith returns a stage.FailFunc that answers cmd with SYSTEM_ERROR
// when the stage it was sent to fails or is down.
func (r *Router) failWith(c *netloop.Conn, cmd *remoting.Command) stage.FailFunc {
	return func(err error) { r.refuse(c, cmd, refuse(remoting.SystemError, "%v", err)) }
}

// send writes resp unless the request was oneway; a closed connection is
// only logged.
func (r *Router) send(c *netloop.Conn, req, resp *remoting.Command) { r.sendVia(nil, c, req, resp) }

// outbox is the writer's answer batch as the router made it (NewBatch): a
// netloop.Outbox, or nil when the writer was given none (an Outbox's
// methods then write at once).
func outbox(b writer.Batch) *netloop.Outbox {
	o, _ := b.(*netloop.Outbox)
	return o
}

// NewBatch is the writer's answer batch for remoting answers
// (writer.Options.NewBatch): a netloop.Outbox, so that a drain writes each
// connection once.
func NewBatch() writer.Batch { return new(netloop.Outbox) }

// sendVia is send through out (nil: written at once): a stage answering a
// batch writes each connection once. It takes the request off its
// connection's count of unanswered ones, oneway or not: every request is
// answered through here exactly once (or settled).
func (r *Router) sendVia(out *netloop.Outbox, c *netloop.Conn, req, resp *remoting.Command) {
	r.settle(c)
	if req.IsOneway() {
		return
	}
	if err := out.Send(c, resp); err != nil {
		r.log.Debug().Err(err).Str("remote", c.RemoteAddr()).Int32("code", req.Code).Msg("response not delivered")
	}
}

// settle takes a request off its connection's count of unanswered ones;
// sendVia calls it, and so does a handler for a request that gets no
// answer at all.
func (r *Router) settle(c *netloop.Conn) { connStateOf(c).inflight.Add(-1) }

// Unanswered is the number of requests read and not yet answered, summed
// over the open connections (the plain-send hot path's included).
func (r *Router) Unanswered() int64 {
	var n int64
	r.conns.Range(func(_, v any) bool {
		n += v.(*connState).inflight.Load()
		return true
	})
	return n
}

func connStateOf(c *netloop.Conn) *connState {
	if s, ok := c.Context().(*connState); ok {
		return s
	}
	return &connState{}
}

// String names the router in logs.
func (r *Router) String() string { return fmt.Sprintf("router(%s)", r.cfg.BrokerName) }

// Package pop is the POP consumption engine: the "pop" stage owns the
// per-(group, topic, queue) state of RocketMQ 5's POP model (deliveries
// invisible until a deadline, acked one by one, redelivered in place with
// attempt+1) and serves POP_MESSAGE, ACK_MESSAGE, BATCH_ACK_MESSAGE and
// CHANGE_MESSAGE_INVISIBLETIME for the router. See docs/pop.md.
package pop

import (
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/dispatch"
	"github.com/wheelmq/wheelmq/actors/offsets"
	"github.com/wheelmq/wheelmq/actors/pop/mode"
	"github.com/wheelmq/wheelmq/actors/pull"
	"github.com/wheelmq/wheelmq/actors/stage"
	"github.com/wheelmq/wheelmq/actors/wirecode"
	"github.com/wheelmq/wheelmq/actors/writer"
	"github.com/wheelmq/wheelmq/storage"
	"github.com/wheelmq/wheelmq/storage/message"
)

// StageName names the POP stage.
const StageName = "pop"

// Initial-offset modes of PopMessageRequestHeader.initMode (RocketMQ
// ConsumeInitMode).
const (
	InitMin = 0
	InitMax = 1
)

// Response codes of the POP family (RocketMQ ResponseCode, defined in
// actors/wirecode).
const (
	CodeSuccess        = wirecode.Success
	CodeNoMessage      = wirecode.PullNotFound // NO_MESSAGE (= PULL_NOT_FOUND)
	CodePollingFull    = wirecode.PollingFull
	CodePollingTimeout = wirecode.PollingTimeout
	CodeSystemError    = wirecode.SystemError
	CodeInvalidParam   = wirecode.InvalidParameter
)

// Pop asks for up to MaxNums messages of (Group, Topic), from queue
// QueueID or, when it is -1, from every one of its Queues.
type Pop struct {
	Group, Topic string
	QueueID      int32
	Queues       int32
	MaxNums      int
	InvisibleMs  int64
	PollUntil    time.Time // zero or past: answer at once
	Filter       pull.Filter
	InitMode     int
	Mode         int // ModePop, ModePeek or ModeNotify
	// Orderly asks for FIFO delivery per message group (fifo.go): the
	// group is orderly, or the request says order=true.
	Orderly bool
	// Priority (a PRIORITY topic, whose queue i holds priority i) reads
	// the queues of a QueueID -1 pop highest first instead of from a
	// rotating start (docs/priority.md).
	Priority bool
	ConnID   uint64
	Reply    func(*Result)
	stage.FailFunc
}

// Result is a pop's answer: Code CodeSuccess with Msgs (a pop: the
// deliveries, decoded, with their receipt handles) or Body (a peek: the
// stored records as they are), or CodeNoMessage / CodePollingTimeout /
// CodePollingFull.
type Result struct {
	Code            int32
	Remark          string
	Msgs            []Delivered
	Body            []byte
	Count           int
	PopTime         int64
	InvisibleTime   int64
	RestNum         int64
	StartOffsetInfo string
	MsgOffsetInfo   string

	entries []entry // the journal's record of the deliveries
}

// Delivered is one message a pop took: the stored record, decoded (its
// ReconsumeTimes is Attempt-1), and the receipt handle that acks it.
type Delivered struct {
	Record  message.Record
	Handle  Handle
	Attempt int32
}

// Ack acks one delivery by its receipt handle (extraInfo).
type Ack struct {
	Group, Topic string
	QueueID      int32
	ExtraInfo    string
	Offset       int64
	Reply        func(code int32, remark string)
	stage.FailFunc
}

// AckItem is one entry of a batch ack: a queue and the offsets acked in
// it, all popped at PopTime with InvisibleTime.
type AckItem struct {
	Group, Topic  string
	QueueID       int32
	PopTime       int64
	InvisibleTime int64
	Offsets       []int64
}

// BatchAck acks several deliveries in one journal append; Reply gets the
// outcome of each offset, in the order of Items and their Offsets
// (CodeSuccess: acked; CodeNoMessage: not live, expired or unknown).
type BatchAck struct {
	Items []AckItem
	Reply func(code int32, remark string, each []int32)
	stage.FailFunc
}

// Change moves a delivery's deadline to now + InvisibleMs and gives it a
// new receipt handle (a later popTime); the old one is refused from then on.
type Change struct {
	Group, Topic string
	QueueID      int32
	ExtraInfo    string
	// Handle, when set, is the delivery's handle, decoded (ExtraInfo is
	// then not read).
	Handle      *Handle
	Offset      int64
	InvisibleMs int64
	Reply       func(code int32, remark string, h Handle)
	stage.FailFunc
}

// Arrived tells the stage messages arrived (dispatch news): parked pops of
// those topics run again.
type Arrived struct{ Queues []dispatch.Arrival }

// Options configures the stage.
type Options struct {
	Store      *storage.Store
	BrokerName string
	// Offsets is the offsets stage: a new queue's start is its committed
	// offset; committed offsets are written there as they advance.
	Offsets func() *stage.Stage
	// Parked counts the parked pops (the pipeline forwards Arrived only
	// while it is positive).
	Parked *atomic.Int64
	// MaxParkedPerConn bounds the parked pops of one connection.
	MaxParkedPerConn int
	// Append appends journal records through the CommitLog writer (nil:
	// no journal, tests).
	Append func(*writer.Append)
	// MaxAttempts is how many deliveries a group's messages get before the
	// dead-letter queue (nil: RocketMQ's default retryMaxTimes 16, + 1).
	MaxAttempts func(group string) int32
	// RetryPolicy is a group's retry policy, which backs off expired
	// deliveries (backoff.go; nil: none does).
	RetryPolicy RetryPolicyFunc
	// EnsureTopic creates a topic (the groups' %DLQ% topics) if it is
	// missing and calls done (nil: topics are not created).
	EnsureTopic func(name string, done func(error))
	// Late observes, for each delivery the wheel made visible again, how
	// many ms after its deadline that happened (nil: not observed).
	Late func(ms int64)
	// Consumed, when set, is told of every pop that handed out messages:
	// the group, the topic (the retry topic for its redeliveries), how
	// many and their bytes (statistics; called on the stage's goroutine).
	Consumed func(group, topic string, msgs, bytes int)
	// Master reports whether this broker is its group's master (nil:
	// always, a standalone broker). Only a master stores the journal's
	// replay start: a replica's engine sees the replicated journal but
	// none of the deliveries it describes, so the start it would compute
	// (the journal's end) would make its promotion skip the old master's
	// pops and acks.
	Master func() bool
	// ModesChanged is called after the modes set by SET_MESSAGE_REQUEST_MODE
	// changed (wire it to the metalog stage, which journals them; nil: not
	// journaled).
	ModesChanged func()
	// ModesApplied reports whether the metadata log has applied every
	// record below a CommitLog position (metalog.Progress.AppliedBelow).
	// After a promotion the journal is read, and pulls and pops are
	// served, only once it has up to the end the replay reads to (nil:
	// not waited for).
	ModesApplied func(end int64) (bool, error)
	// Now is the clock (tests); nil: time.Now.
	Now    func() time.Time
	Logger zerolog.Logger
}

// Engine is the POP state; it outlives restarts of its stage.
type Engine struct {
	opts     Options
	queues   map[qkey]*qstate
	pending  map[qkey]bool // offsets queried, answer not in yet
	waiting  []*Pop        // pops waiting for offsets answers
	parked   []*Pop
	byConn   map[uint64]int
	heap     deadlineHeap
	rr       uint32
	m        Metrics
	inflight atomic.Int64
	replayed map[qkey][]entry // journal entries of queues without state yet
	replayOK bool             // the journal was read (once per process)
	// startEnd is the CommitLog's durable end when the engine was made: the
	// journal is read once the consume queues are dispatched up to it.
	startEnd     int64
	recoverSince time.Time // first try to read the journal
	held         []heldMsg // requests that came before the journal was read
	reviveNext   int64     // the next revive record to read
	// The journal's replay start (compact.go).
	replayedEntries atomic.Int64 // entries the last replay read
	replayStartOff  int64        // where the replay starts
	startAsked      bool         // the offsets stage was asked for it
	startKnown      bool         // and answered (or could not be asked)
	askedAt         time.Time
	storedStart     int64 // the replay start last stored
	// replayedAsMaster: the last replay ran while this broker was master
	// (Options.Master), so the state it built is the group's (ownsState).
	replayedAsMaster bool
	lastCompact      time.Time
	dlqPending       int  // dead-letter copies under way
	lagLogged        bool // the wait for the dispatch stage was given up (logged once)
	modesGate        bool // a promotion waits for Options.ModesApplied
	// self is the stage the engine runs as: every message it sends
	// itself goes through it, so that its mailbox depth counts them.
	self  *stage.Stage
	modes *mode.Table // the consumption model of each (group, topic) (modes.go)
	units storage.UnitReader
}

// New returns an engine; Producer builds its stage.
func New(opts Options) *Engine {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Parked == nil {
		opts.Parked = new(atomic.Int64)
	}
	if opts.MaxParkedPerConn <= 0 {
		opts.MaxParkedPerConn = 64
	}
	e := &Engine{opts: opts, queues: map[qkey]*qstate{}, pending: map[qkey]bool{}, byConn: map[uint64]int{}, modes: mode.New()}
	if opts.Store != nil {
		e.startEnd = opts.Store.DurableLogEnd()
	}
	e.loadModes()
	e.modes.SetRecovering(e.mayHaveJournal())
	return e
}

// ReplayedEntries is how many journal entries the last start read.
func (e *Engine) ReplayedEntries() int64 { return e.replayedEntries.Load() }

// Inflight is the number of deliveries in flight.
func (e *Engine) Inflight() int64 { return e.inflight.Load() }

// Producer returns the stage's producer.
func (e *Engine) Producer() stage.Producer {
	return func(self *stage.Stage) actor.Actor { return &popActor{e: e, self: self, timer: self.NewTimer()} }
}

type tick struct{}

type initDone struct {
	key qkey
	off int64
	ok  bool
}

// tickEvery is how often deadlines and long polls are checked.
const tickEvery = 10 * time.Millisecond

type popActor struct {
	e     *Engine
	self  *stage.Stage
	timer *stage.Timer
}

// Receive implements actor.Actor.
func (a *popActor) Receive(ctx actor.Context) {
	e := a.e
	switch m := ctx.Message().(type) {
	case *actor.Started:
		e.self = a.self
		e.recovered()
		a.timer.Arm(tickEvery, tick{})
	case tick:
		if !e.replayOK {
			if e.recovered() {
				a.serveHeld(ctx)
			} else {
				e.answerHeld(false)
			}
		}
		e.compact()
		if e.replayOK {
			e.readRevives(ctx) // any a missed Revived left (a restart of the stage)
		}
		e.expire(ctx)
		a.timer.Arm(tickEvery, tick{})
	case *Reload:
		e.reload(m.Epoch)
	case *journaled:
		e.noteJournaled(m)
	case *replayFrom:
		e.startKnown = true
		if m.ok {
			e.replayStartOff, e.storedStart = m.off, m.off
		}
		if !e.replayOK && e.recovered() {
			a.serveHeld(ctx)
		}
	case *SetMode:
		e.setMode(m)
	case *ApplyModes:
		m.Done(e.putModes(m.Modes))
	case *PollingInfo:
		m.Reply(e.pollingInfo(m))
	case *InFlight:
		m.Reply(e.inFlightOf(m))
	case *Pop, *Ack, *BatchAck, *Change, *DeadLetter:
		if !e.recovered() {
			e.hold(m)
			break
		}
		a.serve(ctx, m)
	case *initDone:
		e.initialized(m, ctx)
	case *Revived:
		if e.replayOK { // else the journal's replay handles past deadlines
			e.readRevives(ctx)
		}
	case *deadLettered:
		e.deadLettered(m)
	case *reviveFailed:
		woke := map[qkey]bool{}
		now := e.opts.Now().UnixMilli()
		for _, en := range m.entries {
			if en.kind == 'B' { // a back-off keeps its time: the tick's heap
				e.heap.add(deadlineEntry{at: en.popTime + en.invisible, key: en.key, off: en.off, popTime: en.popTime})
				continue
			}
			if e.expireOne(en.key, en.off, en.popTime, now, true) {
				woke[qkey{en.key.group, en.key.topic, 0}] = true
			}
		}
		e.wake(ctx, woke)
	case *Arrived:
		topics := map[string]bool{}
		for _, q := range m.Queues {
			topics[q.Topic] = true
		}
		e.rerun(ctx, func(p *Pop) bool { return topics[p.Topic] })
	case *actor.Restarting, *actor.Stopping:
		a.timer.Stop()
		e.answerParked()
		e.answerHeld(true)
	}
}

// serveHeld serves the requests held while the journal was read.
func (a *popActor) serveHeld(ctx actor.Context) {
	held := a.e.held
	a.e.held = nil
	for _, h := range held {
		a.serve(ctx, h.msg)
	}
}

// serve runs one request once the journal is read.
func (a *popActor) serve(ctx actor.Context, msg any) {
	e := a.e
	switch m := msg.(type) {
	case *Pop:
		e.pop(m, ctx)
	case *Ack:
		code, remark, en := e.ack(m.Group, m.Topic, m.ExtraInfo, m.QueueID, m.Offset)
		if code != CodeSuccess {
			m.Reply(code, remark)
			return
		}
		e.journal([]entry{en}, func(err error) {
			if err != nil {
				m.Reply(failCode(err), err.Error())
				return
			}
			m.Reply(CodeSuccess, "")
		})
	case *BatchAck:
		var ens []entry
		var each []int32
		for _, it := range m.Items {
			for _, off := range it.Offsets {
				h := Handle{PopTime: it.PopTime, InvisibleTime: it.InvisibleTime, QueueID: it.QueueID, Offset: off}
				code, _, en := e.ackHandle(it.Group, it.Topic, h)
				if code == CodeSuccess {
					ens = append(ens, en)
				}
				each = append(each, code)
			}
		}
		e.m.BatchAcks.Add(1)
		e.record(ens, func(err error) {
			if err != nil {
				m.Reply(failCode(err), err.Error(), nil)
				return
			}
			m.Reply(CodeSuccess, "", each)
		})
	case *DeadLetter:
		e.forward(m)
	case *Change:
		e.change(m)
	}
}

// key of a pop's queue.
func (p *Pop) key(q int32) qkey { return qkey{p.Group, p.Topic, q} }

// initialized installs a queue's start and runs the pops that waited.
func (e *Engine) initialized(m *initDone, ctx actor.Context) {
	delete(e.pending, m.key)
	if !e.replayOK {
		return // asked before a Reload: asked again once the journal is read
	}
	if _, ok := e.queues[m.key]; !ok {
		start := m.off
		if !m.ok {
			start = e.initialOffset(m.key, InitMin)
		}
		s := newQState(start)
		e.queues[m.key] = s
		e.applyReplayed(m.key, s)
	}
	e.noteRecovery()
	w := e.waiting
	e.waiting = nil
	for _, p := range w {
		e.pop(p, ctx)
	}
}

// initialOffset is where a group with no committed offset starts.
func (e *Engine) initialOffset(k qkey, mode int) int64 {
	q := e.opts.Store.Queues.Lookup(k.topic, k.queue)
	if q == nil {
		return 0
	}
	if mode == InitMax && q.MinOffset() > 0 {
		return q.MaxOffset()
	}
	return q.MinOffset()
}

// ensure starts offsets queries for the queues of p without state; it
// reports whether all are there.
func (e *Engine) ensure(p *Pop, queues []int32, ctx actor.Context) bool {
	all := true
	self := e.self
	for _, q := range queues {
		k := p.key(q)
		if _, ok := e.queues[k]; ok {
			continue
		}
		var st *stage.Stage
		if e.opts.Offsets != nil {
			st = e.opts.Offsets()
		}
		if st == nil {
			s := newQState(e.initialOffset(k, p.InitMode))
			e.queues[k] = s
			e.applyReplayed(k, s)
			continue
		}
		all = false
		if e.pending[k] {
			continue
		}
		e.pending[k] = true
		mode := p.InitMode
		st.Send(&offsets.Query{Group: k.group, Topic: k.topic, QueueID: k.queue,
			Reply: func(off int64, ok bool) {
				if !ok {
					off, ok = e.initialOffsetSafe(k, mode), true
				}
				self.Send(&initDone{key: k, off: off, ok: ok})
			},
			FailFunc: func(error) { self.Send(&initDone{key: k}) }})
	}
	return all
}

// initialOffsetSafe reads only the queue's atomics (it runs on the offsets
// stage).
func (e *Engine) initialOffsetSafe(k qkey, mode int) int64 { return e.initialOffset(k, mode) }

package broker

// POP: Pop, Peek, Notify and PollingInfo, served by the pop stage
// (actors/pop). The rules (batch size, invisible-time bounds, the group's
// right to consume and its FIFO setting, the subscription filter, the
// one-model-at-a-time rule) are here, once, for every protocol.

import (
	"time"

	"github.com/wheelmq/wheelmq/actors/pop"
)

// Limits of a pop.
const (
	// MaxPopNums bounds a pop's batch (RocketMQ's 32).
	MaxPopNums = 32
	// MaxPopPoll caps how long a pop may wait for messages.
	MaxPopPoll = 60 * time.Second
	// MaxInvisible bounds an invisible time over remoting (a deadline is a
	// timer on the wheel).
	MaxInvisible = 30 * 24 * time.Hour
	// GRPCMinInvisible and GRPCMaxInvisible bound a gRPC receive's
	// invisible duration (the Apache proxy's ProxyConfig defaults; a
	// ChangeInvisibleDuration may go down to 0).
	GRPCMinInvisible = 10 * time.Second
	GRPCMaxInvisible = 12 * time.Hour
)

// PopRequest asks for up to MaxNums messages of (Group, Topic).
type PopRequest struct {
	Group, Topic string
	// QueueID is the queue read, or -1 for every queue of the topic.
	QueueID   int32
	MaxNums   int32
	Invisible time.Duration
	// Poll is how long to wait when nothing is there (capped by
	// MaxPopPoll; 0: answer at once).
	Poll time.Duration
	// InitMode is where a group without a committed offset starts
	// (pop.InitMin, pop.InitMax).
	InitMode int
	// ExpType and Exp are the subscription filter (TAG or SQL92; "": all).
	ExpType, Exp string
	// Order asks FIFO per message group (an orderly group gets it anyway).
	Order bool
	// Conn identifies the connection or session: parked pops are bounded
	// per Conn.
	Conn uint64
}

// Empty says why a pop found nothing.
type Empty uint8

// Why a pop is empty.
const (
	// Found: the pop has messages.
	Found Empty = iota
	// NoMessage: nothing to deliver, and no poll asked.
	NoMessage
	// PollTimeout: the poll ended with nothing.
	PollTimeout
	// PollingFull: too many pops of the connection wait already.
	PollingFull
)

// PopResult is a pop's answer: the deliveries, in queue order, with their
// receipt handles and decoded records (ReconsumeTimes = attempt-1).
type PopResult struct {
	Messages []pop.Delivered
	// Empty says why there are none (Found when there are).
	Empty  Empty
	Remark string
	// PopTime (ms) and InvisibleMs are the deliveries' (every handle
	// carries them too); RestNum counts what the queues still hold.
	PopTime, InvisibleMs, RestNum int64
}

// checkInvisible refuses an invisible time outside the protocol's bounds
// (change: a ChangeInvisibleDuration, which may go down to 0).
func checkInvisible(c Caller, d time.Duration, change bool) *Error {
	lo, hi := time.Duration(0), MaxInvisible
	if c.Protocol == GRPC {
		hi = GRPCMaxInvisible
		if !change {
			lo = GRPCMinInvisible
		}
	}
	if d < lo || d > hi {
		return Errorf(BadInvisibleTime, "invisibleTime %d is illegal: it must be within [%d, %d] ms",
			d.Milliseconds(), lo.Milliseconds(), hi.Milliseconds())
	}
	return nil
}

// popCheck runs a pop's, peek's or notification's common checks and
// returns the topic's queue count.
func (b *Broker) popCheck(c Caller, group, topic string, queueID int32, what string) (int32, *Error) {
	if group == "" || topic == "" {
		return 0, Errorf(BadRequest, "%s: consumerGroup and topic are required", what)
	}
	if !b.Ready() {
		return 0, Errorf(Busy, "[STARTING]broker is starting, try again")
	}
	if err := b.authorize(c, consumeNeeds(group, topic)...); err != nil {
		return 0, err
	}
	queues, err := b.readableTopic(topic, queueID, what, c)
	if err != nil {
		return 0, err
	}
	return queues, nil
}

// Pop takes up to MaxNums messages, invisible for Invisible, waiting up to
// Poll when there are none.
func (b *Broker) Pop(c Caller, r *PopRequest, done func(*PopResult, *Error)) {
	// Only a master serves POP (its check points and acks are appended to
	// the log): a replica refuses before anything is delivered or counted.
	if err := b.NotMaster(); err != nil {
		done(nil, err)
		return
	}
	queues, err := b.popCheck(c, r.Group, r.Topic, r.QueueID, "peeking")
	if err == nil && (r.MaxNums <= 0 || r.MaxNums > MaxPopNums) {
		err = Errorf(BadRequest, "the broker[%s] pop message's num is greater than %d", b.cfg.BrokerName, MaxPopNums)
	}
	if err == nil {
		err = checkInvisible(c, r.Invisible, false)
	}
	var orderly bool
	if err == nil {
		cfg, e := b.ConsumeAllowed(r.Group)
		err, orderly = e, r.Order || cfg.ConsumeMessageOrderly
	}
	if err == nil {
		err = b.PopAllowed(r.Group, r.Topic)
	}
	expType, exp := r.ExpType, r.Exp
	if exp == "" {
		expType, exp = "TAG", "*"
	}
	var st interface{ Send(any) }
	if err == nil {
		st, err = b.stageFor(pop.StageName)
	}
	if err != nil {
		done(nil, err)
		return
	}
	filter, err := b.Filter(expType, exp, 0)
	if err != nil {
		done(nil, err)
		return
	}
	var until time.Time
	if poll := min(r.Poll, MaxPopPoll); poll > 0 {
		until = time.Now().Add(poll)
	}
	tc, _ := b.p.Topics().Get(r.Topic)
	st.Send(&pop.Pop{
		Group: r.Group, Topic: r.Topic, QueueID: r.QueueID, Queues: queues, MaxNums: int(r.MaxNums),
		InvisibleMs: r.Invisible.Milliseconds(), PollUntil: until, Filter: filter, InitMode: r.InitMode,
		Orderly: orderly, Priority: PriorityTopic(tc), ConnID: r.Conn, FailFunc: func(e error) { done(nil, Wrap(Internal, "pop", e)) },
		Reply: func(res *pop.Result) { done(popResult(res)) },
	})
}

// popResult maps the engine's answer.
func popResult(res *pop.Result) (*PopResult, *Error) {
	out := &PopResult{Messages: res.Msgs, Remark: res.Remark, PopTime: res.PopTime, InvisibleMs: res.InvisibleTime, RestNum: res.RestNum}
	switch res.Code {
	case pop.CodeSuccess:
		if len(out.Messages) == 0 {
			out.Empty = NoMessage
		}
	case pop.CodeNoMessage:
		out.Empty = NoMessage
	case pop.CodePollingTimeout:
		out.Empty = PollTimeout
	case pop.CodePollingFull:
		out.Empty = PollingFull
	default:
		return nil, engineError(res.Code, res.Remark)
	}
	return out, nil
}

// engineError maps a pop-stage failure code to a Status.
func engineError(code int32, remark string) *Error {
	switch code {
	case pop.CodeNoMessage:
		return &Error{Status: HandleExpired, Remark: remark}
	case pop.CodeInvalidParam:
		return &Error{Status: BadRequest, Remark: remark}
	case pop.CodeServiceNotAvailable:
		return &Error{Status: NotMaster, Remark: remark}
	case pop.CodePollingFull:
		return &Error{Status: Busy, Remark: remark}
	default:
		return &Error{Status: Internal, Remark: remark}
	}
}

// PeekResult is a peek's answer: the records a pop would take next, as
// stored (concatenated), taking nothing.
type PeekResult struct {
	Stored  []byte
	Count   int
	RestNum int64
}

// Peek reads up to maxNums messages never popped by group, changing
// nothing (PEEK_MESSAGE).
func (b *Broker) Peek(c Caller, group, topic string, queueID, maxNums int32, conn uint64, done func(*PeekResult, *Error)) {
	queues, err := b.popCheck(c, group, topic, queueID, "peeking")
	if err == nil && (maxNums <= 0 || maxNums > MaxPopNums) {
		err = Errorf(BadRequest, "the broker[%s] peek message's num is greater than %d", b.cfg.BrokerName, MaxPopNums)
	}
	if err == nil {
		_, err = b.ConsumeAllowed(group)
	}
	var st interface{ Send(any) }
	if err == nil {
		st, err = b.stageFor(pop.StageName)
	}
	if err != nil {
		done(nil, err)
		return
	}
	all, err := b.Filter("TAG", "*", 0)
	if err != nil {
		done(nil, err)
		return
	}
	st.Send(&pop.Pop{
		Group: group, Topic: topic, QueueID: queueID, Queues: queues, MaxNums: int(maxNums), Filter: all,
		Mode: pop.ModePeek, ConnID: conn, FailFunc: func(e error) { done(nil, Wrap(Internal, "peek", e)) },
		Reply: func(res *pop.Result) {
			if res.Code != pop.CodeSuccess && res.Code != pop.CodeNoMessage {
				done(nil, engineError(res.Code, res.Remark))
				return
			}
			done(&PeekResult{Stored: res.Body, Count: res.Count, RestNum: res.RestNum}, nil)
		},
	})
}

// Notify answers whether a pop of group would find a message, waiting up
// to poll when not (NOTIFICATION).
func (b *Broker) Notify(c Caller, group, topic string, queueID int32, poll time.Duration, conn uint64, done func(has bool, err *Error)) {
	queues, err := b.popCheck(c, group, topic, queueID, "peeking")
	if err == nil {
		_, err = b.ConsumeAllowed(group)
	}
	var st interface{ Send(any) }
	if err == nil {
		st, err = b.stageFor(pop.StageName)
	}
	if err != nil {
		done(false, err)
		return
	}
	var until time.Time
	if poll = min(poll, MaxPopPoll); poll > 0 {
		until = time.Now().Add(poll)
	}
	st.Send(&pop.Pop{
		Group: group, Topic: topic, QueueID: queueID, Queues: queues, MaxNums: 1, PollUntil: until,
		Mode: pop.ModeNotify, ConnID: conn, FailFunc: func(e error) { done(false, Wrap(Internal, "notification", e)) },
		Reply: func(res *pop.Result) {
			switch res.Code {
			case pop.CodeSuccess:
				done(true, nil)
			case pop.CodeNoMessage, pop.CodePollingTimeout:
				done(false, nil)
			default:
				done(false, engineError(res.Code, res.Remark))
			}
		},
	})
}

// PollingInfo counts the pops of (group, topic) waiting, on queueID or
// (-1) on any (POLLING_INFO).
func (b *Broker) PollingInfo(c Caller, group, topic string, queueID int32, done func(parked int, err *Error)) {
	_, err := b.popCheck(c, group, topic, queueID, "peeking")
	if err == nil {
		_, err = b.ConsumeAllowed(group)
	}
	var st interface{ Send(any) }
	if err == nil {
		st, err = b.stageFor(pop.StageName)
	}
	if err != nil {
		done(0, err)
		return
	}
	st.Send(&pop.PollingInfo{Group: group, Topic: topic, QueueID: queueID, Reply: func(n int) { done(n, nil) }})
}

package broker

// PULL_MESSAGE (11) and LITE_PULL_MESSAGE (361, served alike): the rules
// of a pull (the topic readable, the group allowed to consume and not
// consumed by POP, the piggybacked commit, the subscription filter, an
// admin reset waiting for the queue) before the pull stage reads it, and
// parks it as a long poll when nothing is there yet. The codec decodes
// and encodes; nothing here blocks the caller.

import (
	"sync/atomic"
	"time"

	"github.com/wheelmq/wheelmq/actors/offsets"
	"github.com/wheelmq/wheelmq/actors/pull"
	"github.com/wheelmq/wheelmq/actors/stage"
)

// MaxPullSuspend caps how long a pull may be parked.
const MaxPullSuspend = 60 * time.Second

// PullRequest is one pull.
type PullRequest struct {
	Group, Topic string
	QueueID      int32
	// Offset is where to read from; MaxNums how many messages at most
	// (0: 32).
	Offset  int64
	MaxNums int32
	// SysFlag is RocketMQ's PullSysFlag (pull.FlagCommitOffset,
	// FlagSuspend, FlagSubscription, FlagLitePull).
	SysFlag int32
	// CommitOffset, with pull.FlagCommitOffset and not negative, is
	// committed as the group's offset of the queue first.
	CommitOffset int64
	// Suspend is how long a long poll may be parked (capped at
	// MaxPullSuspend).
	Suspend time.Duration
	// ExpressionType, Expression and SubVersion are the consumer's own
	// subscription, used with pull.FlagSubscription (else the one its
	// group's heartbeat registered, else every message).
	ExpressionType, Expression string
	SubVersion                 int64
	// ConnID names the client's connection (the bound on parked long
	// polls per connection); Busy, when set, says why the connection can
	// take no more answers ("" when it can).
	ConnID uint64
	Busy   func() string
}

// PullResult is a pull's answer (pull.Result, passed by value: the pull
// path allocates nothing for it). Its Outcome pull.Busy and pull.Failed
// are refusals: PullRefusal says which.
type PullResult = pull.Result

// PullRefusal is the *Error of a pull answered Busy (the client's
// connection takes no more answers) or Failed (the read failed); nil for
// the outcomes a codec encodes as an answer.
func PullRefusal(res PullResult) *Error {
	switch res.Outcome {
	case pull.Busy:
		return &Error{Status: Busy, Remark: res.Remark}
	case pull.Failed:
		return &Error{Status: Internal, Remark: res.Remark}
	}
	return nil
}

// pullStages caches the stages every pull uses (a Stage stays the same
// across its actor's restarts).
type pullStages struct{ pull, offsets atomic.Pointer[stage.Stage] }

// cachedStage returns the named stage, from slot once it was found.
func (b *Broker) cachedStage(slot *atomic.Pointer[stage.Stage], name string) *stage.Stage {
	if s := slot.Load(); s != nil {
		return s
	}
	s := b.p.Stage(name)
	if s != nil {
		slot.Store(s)
	}
	return s
}

// Pull serves a pull: a refusal is returned at once; otherwise reply gets
// the answer, on a pull stage's goroutine (never blocking it: a long poll
// is parked there, not waited for), and Pull returns nil.
func (b *Broker) Pull(c Caller, req PullRequest, reply func(PullResult)) *Error {
	if err := b.pullAllowed(c, &req); err != nil {
		return err
	}
	filter, err := b.pullFilter(&req)
	if err != nil {
		return err
	}
	pst, ost := b.cachedStage(&b.pulls.pull, pull.StageName), b.cachedStage(&b.pulls.offsets, offsets.StageName)
	if pst == nil || ost == nil {
		return Errorf(Unavailable, "[STAGE_DOWN]no pull or offsets stage")
	}
	if req.SysFlag&pull.FlagCommitOffset != 0 && req.CommitOffset >= 0 {
		ost.Send(&offsets.Commit{Group: req.Group, Topic: req.Topic, QueueID: req.QueueID, Offset: req.CommitOffset})
	}
	b.submitPull(&pull.Request{
		Group: req.Group, Topic: req.Topic, QueueID: req.QueueID, Offset: req.Offset, MaxNums: req.MaxNums,
		SysFlag: req.SysFlag, Filter: filter, SuspendUntil: time.Now().Add(req.Suspend),
		ConnID: req.ConnID, Busy: req.Busy, Reply: reply,
	})
	return nil
}

// pullAllowed checks a pull as RocketMQ's PullMessageProcessor does (the
// topic, the queue, the group), then the one-model-per-group rule; it
// caps req.Suspend.
func (b *Broker) pullAllowed(c Caller, req *PullRequest) *Error {
	if b.authz != nil && !c.Checked { // else no need to build the needs
		if err := b.authorize(c, consumeNeeds(req.Group, req.Topic)...); err != nil {
			return err
		}
	}
	if _, err := b.readableTopic(req.Topic, req.QueueID, "pulling", c); err != nil {
		return err
	}
	if req.QueueID < 0 {
		return Errorf(BadRequest, "queueId[%d] is illegal, topic[%s]", req.QueueID, req.Topic)
	}
	if _, err := b.ConsumeAllowed(req.Group); err != nil {
		return err
	}
	req.Suspend = min(max(req.Suspend, 0), MaxPullSuspend)
	return b.PullAllowed(req.Group, req.Topic, req.Suspend)
}

// pullFilter is a pull's subscription filter: the consumer's own, else
// its group's registered one, else every message (clients filter by tag
// again).
func (b *Broker) pullFilter(req *PullRequest) (pull.Filter, *Error) {
	if req.SysFlag&pull.FlagSubscription != 0 {
		return b.Filter(req.ExpressionType, req.Expression, req.SubVersion)
	}
	sub, ok := b.p.Subscriptions().LookupSubscription(req.Group, req.Topic)
	if !ok {
		return pull.Filter{All: true}, nil
	}
	f, err := b.Filter(sub.Type, sub.Expression, sub.Version)
	if err != nil {
		return f, &Error{Status: FilterDataMissing, Remark: "The broker's consumer filter data is not exist!Your expression may be wrong!", Err: err}
	}
	return f, nil
}

// submitPull hands a pull to the pull stage, unless an admin reset of its
// queue (ResetOffsets) waits for it: like RocketMQ 5, such a pull is told
// OFFSET_MOVED to the new offset, once. A pull already at the reset offset
// (its consumer took RESET_CONSUMER_CLIENT_OFFSET) clears the mark and is
// served. Parked long polls of a reset queue come back here
// (WakeResetPulls).
func (b *Broker) submitPull(req *pull.Request) {
	pst, ost := b.cachedStage(&b.pulls.pull, pull.StageName), b.cachedStage(&b.pulls.offsets, offsets.StageName)
	if pst == nil || ost == nil {
		req.Reply(pull.Result{Outcome: pull.Failed, Remark: "[STAGE_DOWN]no pull or offsets stage"})
		return
	}
	if !b.p.Resets().Pending(req.Group, req.Topic, req.QueueID) {
		pst.Send(req)
		return
	}
	ost.Send(&offsets.TakeReset{Group: req.Group, Topic: req.Topic, QueueID: req.QueueID, FailFunc: req.Fail,
		Reply: func(off int64, ok bool) {
			if !ok || off == req.Offset {
				pst.Send(req)
				return
			}
			var minOff, maxOff int64
			if q := b.p.Store().Queues.Lookup(req.Topic, req.QueueID); q != nil {
				minOff, maxOff = q.MinOffset(), q.MaxOffset()
			}
			req.Reply(pull.Result{Outcome: pull.OffsetMoved, Remark: "OFFSET_RESET", Next: off, Min: minOff, Max: maxOff})
		}})
}

// WakeResetPulls answers now, through the reset rule, the long polls of
// group parked on the given queues of topic: an admin reset of those
// queues moves them (ResetOffsets' listener calls it).
func (b *Broker) WakeResetPulls(group, topic string, queues []int32) {
	if st := b.cachedStage(&b.pulls.pull, pull.StageName); st != nil {
		st.Send(&pull.Unpark{Group: group, Topic: topic, Queues: queues, Each: b.submitPull})
	}
}

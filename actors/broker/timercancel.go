package broker

// CancelTimer: cancel a pending timer message by the offset message id its
// send returned (the id of its copy in the timer topic; wheelmq's
// CANCEL_TIMER_MESSAGE, used by wheelctl cancel). The broker reads that
// copy (the pull stage does the file I/O) and stores a cancel exactly as
// RocketMQ's TIMER_DEL_UNIQKEY cancel messages are: same due time, key
// "<realTopic>+<uniqKey>". NotFound when the offset holds no timer
// message; BadRequest when it holds a cancel; IllegalMessage when it is
// already due. A recurring timer's record (the send's or a next-fire
// record) gets a stop record and a cancel of its first fire after now
// (schedulecancel.go), after its first fire too.

import (
	"strconv"
	"time"

	"github.com/wheelmq/wheelmq/actors/pull"
	"github.com/wheelmq/wheelmq/actors/timer"
	"github.com/wheelmq/wheelmq/actors/timer/schedule"
	"github.com/wheelmq/wheelmq/actors/writer"
	"github.com/wheelmq/wheelmq/storage/message"
)

// CancelTimerRequest names the timer message to cancel.
type CancelTimerRequest struct {
	// MsgID is its offset message id (for remarks and the log).
	MsgID string
	// CommitLogOffset is where its timer-topic copy is stored.
	CommitLogOffset int64
	// Authorize, when set, decides with the message's topic whether the
	// caller may cancel it (a codec's own ACL check); without it the
	// broker's ACL decides (PUB on that topic).
	Authorize func(topic string) *Error
}

// CancelTimer stores the cancel of a pending timer message; done runs on
// the writer's goroutine (its result's Out collects the answers of its
// batch), or the pull stage's for a refusal.
func (b *Broker) CancelTimer(c Caller, req *CancelTimerRequest, done func(writer.Result, *Error)) {
	fail := func(err *Error) { done(writer.Result{}, err) }
	if err := stagesDown(append(b.send.writer, b.send.timers...)); err != nil {
		fail(err)
		return
	}
	b.p.Stage(pull.StageName).Send(&pull.ReadAt{Offset: req.CommitLogOffset, Reply: func(rec []byte, err error) {
		if err != nil {
			fail(Errorf(NotFound, "no message at %s: %v", req.MsgID, err))
			return
		}
		b.cancelTimer(c, req, rec, done)
	}})
}

// cancelTimer stores the cancel of the timer message rec (read at the
// request's offset); it runs on the pull stage.
func (b *Broker) cancelTimer(c Caller, req *CancelTimerRequest, rec []byte, done func(writer.Result, *Error)) {
	fail := func(err *Error) { done(writer.Result{}, err) }
	tm, _, err := message.Decode(rec)
	if err != nil || (tm.Topic != timer.Topic && tm.Topic != timer.RollTopic) { // a rolled timer (retention) is cancelled alike
		fail(Errorf(NotFound, "%s is not a pending timer message", req.MsgID))
		return
	}
	props := message.DecodeProperties(tm.Properties)
	if _, isCancel := props[message.PropTimerDelUniqKey]; isCancel {
		fail(Errorf(BadRequest, "%s is itself a cancel", req.MsgID))
		return
	}
	due, err := strconv.ParseInt(props[message.PropTimerOutMS], 10, 64)
	if err != nil {
		fail(Errorf(NotFound, "%s has no due time", req.MsgID))
		return
	}
	now := time.Now().UnixMilli()
	_, recurring := props[schedule.Prop]
	if due <= now && !recurring {
		fail(Errorf(IllegalMessage, "timer message %s was due at %d and is already delivered", req.MsgID, due))
		return
	}
	realTopic, uniq := props[message.PropRealTopic], props[message.PropUniqKey]
	authorized := b.authorize(c, pubOn(realTopic))
	if req.Authorize != nil {
		authorized = req.Authorize(realTopic)
	}
	if authorized != nil {
		fail(authorized)
		return
	}
	if err := b.DiskFull(); err != nil {
		fail(err)
		return
	}
	var stop []byte
	if recurring {
		if due, err = pendingFire(props[schedule.Prop], due, now); err != nil {
			fail(Errorf(IllegalMessage, "%s: %v", req.MsgID, err))
			return
		}
		if stop, err = timer.StopRecord(realTopic, uniq, props[schedule.Prop], now, c.Remote, b.advertise); err != nil {
			fail(Errorf(Internal, "encode the schedule's stop: %v", err))
			return
		}
	}
	enc, err := b.encodeCancel(c, realTopic, uniq, props[message.PropRealQueueID], due, now)
	if err != nil {
		fail(Errorf(Internal, "encode cancel: %v", err))
		return
	}
	b.appendCancels(stop, [][]byte{enc}, func(res writer.Result) {
		if res.Err != nil {
			done(res, sendFailure(res.Err))
			return
		}
		b.log.Info().Str("msg_id", req.MsgID).Bool("schedule_stopped", stop != nil).Str("topic", realTopic).Str("uniq_key", uniq).
			Int64("due_ms", due).Str("protocol", c.Protocol.String()).Msg("timer message cancelled by admin request")
		done(res, nil)
	})
}

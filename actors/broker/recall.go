package broker

// Recall: withdraw a pending timer message by the recall handle its send
// answer carried (RocketMQ 5.3.2+, RecallMessageProcessor). The codecs
// parse the handle (RocketMQ's RecallMessageHandle v1, netloop/remoting
// recallhandle.go) into a RecallRequest; the broker checks it against the
// request (its topic, this broker's name, a due time still ahead and within
// the longest delay) and stores a cancel of that uniq key at that due
// time, the cancel record a TIMER_DEL_UNIQKEY send writes; the wheel drops
// the message when the cancel is applied. A handle that names another
// topic or broker, or is already due: Conflict (RocketMQ's
// ILLEGAL_OPERATION and remarks). Recall of a message that was never sent
// or already cancelled succeeds and changes nothing, as in RocketMQ.

import (
	"strconv"
	"time"

	"github.com/wheelmq/wheelmq/actors/timer"
	"github.com/wheelmq/wheelmq/actors/writer"
	"github.com/wheelmq/wheelmq/storage/message"
)

// RecallRequest is a decoded recall handle and the topic the caller names.
type RecallRequest struct {
	// Topic is the topic the request names.
	Topic string
	// The handle's fields: its topic, broker, due time and uniq key.
	HandleTopic string
	BrokerName  string
	DueMs       int64
	Uniq        string
}

// Recall stores the cancel of a pending timer message (a recurring timer's
// stop record and the cancel of its next fire, schedulecancel.go); done
// gets the message's uniq key (its id) and the writer's result (whose Out
// collects the answers of its batch), on the writer's goroutine, or the
// caller's or the index stage's for a refusal.
func (b *Broker) Recall(c Caller, req *RecallRequest, done func(uniq string, res writer.Result, err *Error)) {
	fail := func(err *Error) { done("", writer.Result{}, err) }
	if !b.Ready() {
		fail(Errorf(Busy, "[STARTING]broker is starting, try again"))
		return
	}
	if err := b.authorize(c, pubOn(req.Topic)); err != nil {
		fail(err)
		return
	}
	if _, ok := b.p.Topics().Get(req.Topic); !ok {
		fail(Errorf(TopicNotFound, "recall failed, the topic[%s] not exist", req.Topic))
		return
	}
	switch {
	case req.HandleTopic != req.Topic:
		fail(Errorf(Conflict, "recall failed, topic not match"))
		return
	case req.BrokerName != b.cfg.BrokerName:
		fail(Errorf(Conflict, "recall failed, broker service not available"))
		return
	}
	if err := stagesDown(append(b.send.writer, b.send.timers...)); err != nil {
		fail(err)
		return
	}
	if err := b.DiskFull(); err != nil {
		fail(err)
		return
	}
	// A recurring timer's handle names its first fire; the schedule is
	// found by its UNIQ_KEY in the message index (schedulecancel.go).
	b.findSchedule(req.Topic, req.Uniq, func(text string, dueMs int64, found bool) {
		now := time.Now().UnixMilli()
		due := req.DueMs
		var stop []byte
		if found {
			var err error
			if due, err = pendingFire(text, dueMs, now); err != nil {
				fail(Errorf(Conflict, "recall failed, %v", err))
				return
			}
			if stop, err = timer.StopRecord(req.Topic, req.Uniq, text, now, c.Remote, b.advertise); err != nil {
				fail(Errorf(Internal, "recall failed, encode the schedule's stop: %v", err))
				return
			}
		} else if left := req.DueMs - now; left <= 0 || left >= b.cfg.MaxTimerDelay.Milliseconds() {
			fail(Errorf(Conflict, "recall failed, timestamp invalid"))
			return
		}
		b.storeRecall(c, req, due, stop, now, done)
	})
}

// storeRecall stores the cancel of a recall: of its timer's due time, or
// a recurring timer's stop record and the cancel of its next fire.
func (b *Broker) storeRecall(c Caller, req *RecallRequest, due int64, stop []byte, now int64,
	done func(uniq string, res writer.Result, err *Error)) {
	enc, err := b.encodeCancel(c, req.Topic, req.Uniq, "0", due, now)
	if err != nil {
		done("", writer.Result{}, Errorf(Internal, "recall failed, encode the cancel: %v", err))
		return
	}
	b.appendCancels(stop, [][]byte{enc}, func(res writer.Result) {
		if res.Err != nil {
			e := sendFailure(res.Err)
			e.Remark = "recall failed, " + e.Remark
			done("", res, e)
			return
		}
		b.log.Info().Str("topic", req.Topic).Str("uniq_key", req.Uniq).Int64("due_ms", due).
			Bool("schedule_stopped", stop != nil).Str("protocol", c.Protocol.String()).Msg("timer message recalled")
		done(req.Uniq, res, nil)
	})
}

// encodeCancel encodes the timer-topic record that cancels the timer
// message uniq of realTopic due at dueMs (TIMER_DEL_UNIQKEY
// realTopic+uniq): the record RECALL_MESSAGE and the admin cancel both
// append.
func (b *Broker) encodeCancel(c Caller, realTopic, uniq, realQueueID string, dueMs, now int64) ([]byte, error) {
	cancel := map[string]string{
		message.PropTimerDelUniqKey: realTopic + "+" + uniq,
		message.PropUniqKey:         uniq,
		message.PropTimerOutMS:      strconv.FormatInt(dueMs, 10),
		message.PropRealTopic:       realTopic,
		message.PropRealQueueID:     realQueueID,
		message.PropCluster:         b.cfg.Cluster,
	}
	out := &message.Record{
		QueueID: 0, BornTimestamp: now, BornHost: c.Remote, StoreTimestamp: now, StoreHost: b.advertise,
		Body: []byte("0"), Topic: timer.Topic, Properties: message.EncodeProperties(cancel),
	}
	return out.Encode(nil)
}

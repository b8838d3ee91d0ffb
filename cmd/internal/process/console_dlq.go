package process

// The console's dead-letter pages and test send, through the broker API:
// a DLQ's messages read with ReadQueue, a resend and a test message
// stored with Send as the logged-in account.

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/wheelmq/wheelmq/actors/broker"
	"github.com/wheelmq/wheelmq/cmd/internal/console"
	"github.com/wheelmq/wheelmq/netloop/auth"
	"github.com/wheelmq/wheelmq/storage/message"
	"github.com/wheelmq/wheelmq/storage/meta"
)

// maxResends bounds the resends remembered for the console.
const maxResends = 500

// previewBytes is how much of a body the dead-letter list shows.
const previewBytes = 120

// resendLog remembers the console's resends since the start, newest last.
type resendLog struct {
	mu   sync.Mutex
	list []console.Resent // guarded by mu
}

func (l *resendLog) add(r console.Resent) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.list = append(l.list, r)
	if len(l.list) > maxResends {
		l.list = slices.Delete(l.list, 0, len(l.list)-maxResends)
	}
}

// of returns the resends from topic ("": all), newest first.
func (l *resendLog) of(topic string) []console.Resent {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []console.Resent
	for i := len(l.list) - 1; i >= 0; i-- {
		if topic == "" || l.list[i].From == topic {
			out = append(out, l.list[i])
		}
	}
	return out
}

// DeadLetterQueues lists the %DLQ% topics the account may SUB on, with
// their counts from the consume queues' bounds.
func (cb *consoleBackend) DeadLetterQueues(_ context.Context, c console.Credentials) ([]console.DeadLetterQueue, error) {
	core, err := cb.core()
	if err != nil {
		return nil, err
	}
	may := cb.mayRead(c, auth.TopicNeed)
	var out []console.DeadLetterQueue
	for name, tc := range cb.n.broker.pipe.Topics().Load().Topics {
		if !strings.HasPrefix(name, meta.DLQGroupTopicPrefix) || !may(name) {
			continue
		}
		q := console.DeadLetterQueue{Topic: name, Group: strings.TrimPrefix(name, meta.DLQGroupTopicPrefix)}
		for id := range max(tc.WriteQueueNums, tc.ReadQueueNums) {
			lo, hi, berr := core.QueueBounds(cb.caller(c), broker.QueueRef{Topic: name, QueueID: id})
			if berr != nil {
				return nil, berr
			}
			if id == 0 {
				q.Min, q.Max = lo, hi
			}
			q.Messages += hi - lo
		}
		out = append(out, q)
	}
	slices.SortFunc(out, func(a, b console.DeadLetterQueue) int { return strings.Compare(a.Topic, b.Topic) })
	return out, nil
}

// DeadLetters reads a DLQ's queue 0 newest first.
func (cb *consoleBackend) DeadLetters(ctx context.Context, c console.Credentials, topic string, below int64, n int) ([]console.DeadLetter, error) {
	if !strings.HasPrefix(topic, meta.DLQGroupTopicPrefix) {
		return nil, fmt.Errorf("%q is not a dead-letter topic (%%DLQ%%<group>)", topic)
	}
	core, err := cb.core()
	if err != nil {
		return nil, err
	}
	ref := broker.QueueRef{Topic: topic}
	lo, hi, berr := core.QueueBounds(cb.caller(c), ref)
	if berr != nil {
		return nil, berr
	}
	if below < 0 || below > hi {
		below = hi
	}
	resent := map[int64]int{}
	for _, r := range cb.resends.of(topic) {
		resent[r.Offset]++
	}
	var out []console.DeadLetter
	for off := below - 1; off >= lo && len(out) < n; off-- {
		sm, err := await(ctx, func(done func(*broker.StoredMessage, *broker.Error)) { core.ReadQueue(cb.caller(c), ref, off, done) })
		if err != nil {
			if e, ok := err.(*broker.Error); ok && e.Status == broker.NotFound {
				continue // gone by retention while reading
			}
			return out, err
		}
		d := deadLetterOf(sm.Record, off)
		d.Resent = resent[off]
		out = append(out, d)
	}
	return out, nil
}

// deadLetterOf is the list's view of a DLQ record.
func deadLetterOf(r message.Record, off int64) console.DeadLetter {
	p := message.DecodeProperties(r.Properties)
	origin := p[message.PropRetryTopic]
	if origin == "" && !strings.HasPrefix(p[message.PropDLQOriginTopic], meta.RetryGroupTopicPrefix) {
		origin = p[message.PropDLQOriginTopic]
	}
	return console.DeadLetter{Queue: int(r.QueueID), Offset: off, MsgID: p[message.PropUniqKey],
		OffsetMsgID: message.OffsetMsgID(r.StoreHost, r.PhysicalOffset), OriginTopic: origin,
		OriginMsgID: p[message.PropOriginMessageID], Keys: p[message.PropKeys], Tags: p[message.PropTags],
		ReconsumeTimes: int(r.ReconsumeTimes), BornAt: time.UnixMilli(r.BornTimestamp), StoredAt: time.UnixMilli(r.StoreTimestamp),
		Size: int64(len(r.Body)), Preview: preview(r.Body, r.SysFlag)}
}

// preview is the first bytes of a body as text (dots for what is not
// printable; a compressed body is not inflated).
func preview(body []byte, sysFlag int32) string {
	if sysFlag&message.SysFlagCompressed != 0 {
		return fmt.Sprintf("(compressed, %d bytes)", len(body))
	}
	b := body
	if len(b) > previewBytes {
		b = b[:previewBytes]
	}
	var s strings.Builder
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if r == utf8.RuneError && n <= 1 || r < 0x20 && r != '\t' {
			r = '.'
		}
		s.WriteRune(r)
		b = b[n:]
	}
	if len(body) > previewBytes {
		s.WriteString("…")
	}
	return s.String()
}

// resendDropped are the properties a resent copy does not keep: a delay
// (it would go back into the timer) and what only a stored DLQ copy has.
var resendDropped = []string{message.PropDelay, message.PropTimerDeliverMS, message.PropTimerDelaySec, message.PropTimerDelayMS,
	message.PropTimerOutMS, message.PropTimerEnqueueMS, message.PropTimerDequeueMS, message.PropTimerRollTimes,
	message.PropRealTopic, message.PropRealQueueID, message.PropDLQOriginTopic, message.PropDLQOriginMessageID,
	message.PropReconsumeTime, message.PropMaxReconsumeTimes, message.PropTranMsg, message.PropCluster}

// Resend reads the dead letter and sends a copy as the account: to the
// group's %RETRY% topic (RETRY_TOPIC names the original, as a consumer's
// send-back does) or to the original topic, its properties kept (its
// message id too), its reconsume count back to 0. The DLQ keeps it.
func (cb *consoleBackend) Resend(ctx context.Context, c console.Credentials, rq console.ResendRequest) (console.Resent, error) {
	var res console.Resent
	if !strings.HasPrefix(rq.Topic, meta.DLQGroupTopicPrefix) {
		return res, fmt.Errorf("%q is not a dead-letter topic", rq.Topic)
	}
	core, err := cb.core()
	if err != nil {
		return res, err
	}
	ref := broker.QueueRef{Topic: rq.Topic, QueueID: int32(rq.Queue)}
	sm, err := await(ctx, func(done func(*broker.StoredMessage, *broker.Error)) {
		core.ReadQueue(cb.caller(c), ref, rq.Offset, done)
	})
	if err != nil {
		return res, err
	}
	r := sm.Record
	d := deadLetterOf(r, rq.Offset)
	group := strings.TrimPrefix(rq.Topic, meta.DLQGroupTopicPrefix)
	props := message.DecodeProperties(r.Properties)
	for _, k := range resendDropped {
		delete(props, k)
	}
	var to string
	switch rq.To {
	case console.ResendToRetry:
		to = meta.RetryTopic(group)
		if d.OriginTopic != "" {
			props[message.PropRetryTopic] = d.OriginTopic
		}
	case console.ResendToOrigin:
		if d.OriginTopic == "" {
			return res, fmt.Errorf("the message names no original topic (no %s property): resend it to the retry topic", message.PropRetryTopic)
		}
		to = d.OriginTopic
		delete(props, message.PropRetryTopic)
	default:
		return res, fmt.Errorf("resend to %q: want %q or %q", rq.To, console.ResendToRetry, console.ResendToOrigin)
	}
	req := &broker.SendRequest{ProducerGroup: "CONSOLE", Topic: to, QueueID: -1, Flag: r.Flag,
		SysFlag: r.SysFlag &^ message.SysFlagTransactionRollback, BornTimestamp: r.BornTimestamp, Props: props, Body: r.Body}
	sr, err := await(ctx, func(done func(*broker.SendResult, *broker.Error)) { core.Send(cb.caller(c), req, done) })
	if err != nil {
		return res, err
	}
	res = console.Resent{At: time.Now(), Who: accountName(c), From: rq.Topic, Offset: rq.Offset, MsgID: d.MsgID, To: to,
		OffsetMsgID: message.OffsetMsgID(core.Advertise(), sr.Offsets[0])}
	cb.resends.add(res)
	return res, nil
}

// Resends are the resends remembered since the start.
func (cb *consoleBackend) Resends(topic string) []console.Resent { return cb.resends.of(topic) }

// accountName names the console's account in a record.
func accountName(c console.Credentials) string {
	if c.AccessKey == "" {
		return "anonymous"
	}
	return c.AccessKey
}

// TestSend sends the form's message as the account; a delivery time
// makes it a timer message (TIMER_DELIVER_MS).
func (cb *consoleBackend) TestSend(ctx context.Context, c console.Credentials, m console.TestMessage) (console.Sent, error) {
	var out console.Sent
	core, err := cb.core()
	if err != nil {
		return out, err
	}
	props := map[string]string{}
	if m.Tags != "" {
		props[message.PropTags] = m.Tags
	}
	if m.Keys != "" {
		props[message.PropKeys] = m.Keys
	}
	if !m.DeliverAt.IsZero() {
		props[message.PropTimerDeliverMS] = fmt.Sprint(m.DeliverAt.UnixMilli())
	}
	req := &broker.SendRequest{ProducerGroup: "CONSOLE", Topic: m.Topic, QueueID: -1, BornTimestamp: time.Now().UnixMilli(),
		Props: props, Body: []byte(m.Body)}
	sr, err := await(ctx, func(done func(*broker.SendResult, *broker.Error)) { core.Send(cb.caller(c), req, done) })
	if err != nil {
		return out, err
	}
	out = console.Sent{Queue: int(sr.QueueID), QueueOffset: sr.QueueOffset, OffsetMsgID: message.OffsetMsgID(core.Advertise(), sr.Offsets[0])}
	if len(sr.UniqKeys) > 0 {
		out.MsgID = sr.UniqKeys[0]
	}
	return out, nil
}

package process

// The console's admin calls: each one a RocketMQ admin request to the
// broker's own port, as wheelctl sends them (cmd/internal/admin).

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/wheelmq/wheelmq/actors/broker"
	"github.com/wheelmq/wheelmq/actors/pull"
	"github.com/wheelmq/wheelmq/actors/timer"
	"github.com/wheelmq/wheelmq/cmd/internal/admin"
	"github.com/wheelmq/wheelmq/cmd/internal/console"
	"github.com/wheelmq/wheelmq/netloop/auth"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/message"
	"github.com/wheelmq/wheelmq/storage/meta"
)

// Topics reads the topics stage's published snapshot (what
// GET_ALL_TOPIC_CONFIG answers, without encoding 10,000 topics to JSON and
// back), keeping for a non-admin account the topics it may SUB on: the
// broker serves GET_ALL_TOPIC_CONFIG to admins only.
func (cb *consoleBackend) Topics(_ context.Context, c console.Credentials) ([]console.Topic, error) {
	if cb.n.broker == nil {
		return nil, fmt.Errorf("this process runs no broker")
	}
	may := cb.mayRead(c, auth.TopicNeed)
	tab := cb.n.broker.pipe.Topics().Load().Topics
	out := make([]console.Topic, 0, len(tab))
	for name, tc := range tab {
		if !may(name) {
			continue
		}
		out = append(out, console.Topic{Name: name, ReadQueues: int(tc.ReadQueueNums), WriteQueues: int(tc.WriteQueueNums),
			Perm: int(tc.Perm), Order: tc.Order, System: isSystemTopic(name, int(tc.TopicSysFlag))})
	}
	return out, nil
}

// mayRead returns whether c's account may SUB on a named resource (always
// without ACL, and for an admin).
func (cb *consoleBackend) mayRead(c console.Credentials, need func(string, auth.Perm) auth.Need) func(string) bool {
	g := cb.n.guard
	if g == nil {
		return func(string) bool { return true }
	}
	acct, ok := g.Lookup(c.AccessKey)
	if !ok {
		return func(string) bool { return false }
	}
	if acct.IsAdmin() {
		return func(string) bool { return true }
	}
	lo := netip.MustParseAddr("127.0.0.1")
	return func(name string) bool {
		ok, _ := acct.Allows(need(name, auth.PermSub), lo)
		return ok
	}
}

// isSystemTopic tells the broker's own topics.
func isSystemTopic(name string, sysFlag int) bool {
	return sysFlag != 0 || meta.IsSystemTopic(name) || name == "TBW102" || strings.HasPrefix(name, "rmq_sys_") || strings.HasPrefix(name, "%RETRY%") ||
		strings.HasPrefix(name, "%DLQ%") || strings.HasPrefix(name, "RMQ_SYS_") || name == "SCHEDULE_TOPIC_XXXX"
}

// caller is the broker API's Caller of a console request: the logged-in
// account, from the loopback address the console's own calls used to come
// from.
func (cb *consoleBackend) caller(c console.Credentials) broker.Caller {
	return broker.Caller{Protocol: broker.Console, Account: c.AccessKey,
		Remote: netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), 0)}
}

// core is the broker's API (an error when the process runs no broker).
func (cb *consoleBackend) core() (*broker.Broker, error) {
	if cb.n.broker == nil {
		return nil, fmt.Errorf("this process runs no broker")
	}
	return cb.n.broker.core, nil
}

// await waits for a broker API call's answer, or ctx's end.
func await[T any](ctx context.Context, call func(done func(T, *broker.Error))) (T, error) {
	type answer struct {
		v   T
		err *broker.Error
	}
	ch := make(chan answer, 1)
	call(func(v T, err *broker.Error) { ch <- answer{v, err} })
	select {
	case a := <-ch:
		if a.err != nil {
			return a.v, a.err
		}
		return a.v, nil
	case <-ctx.Done():
		var zero T
		return zero, fmt.Errorf("broker call: %w", ctx.Err())
	}
}

// awaitDone is await for a call that answers only its outcome.
func awaitDone(ctx context.Context, call func(done func(*broker.Error))) error {
	_, err := await(ctx, func(done func(struct{}, *broker.Error)) {
		call(func(err *broker.Error) { done(struct{}{}, err) })
	})
	return err
}

func (cb *consoleBackend) TopicQueues(ctx context.Context, c console.Credentials, topic string) ([]console.Queue, error) {
	core, err := cb.core()
	if err != nil {
		return nil, err
	}
	st, err := await(ctx, func(done func(*broker.TopicStats, *broker.Error)) { core.TopicStats(cb.caller(c), topic, done) })
	if err != nil {
		return nil, err
	}
	out := make([]console.Queue, 0, len(st.Queues))
	for _, q := range st.Queues {
		out = append(out, console.Queue{Broker: cb.n.broker.cfg.BrokerName, ID: int(q.QueueID), Min: q.Min, Max: q.Max,
			LastUpdateMs: q.LastStoreMs})
	}
	return out, nil
}

func (cb *consoleBackend) CreateTopic(ctx context.Context, c console.Credentials, t console.Topic) error {
	core, err := cb.core()
	if err != nil {
		return err
	}
	spec := broker.TopicSpec{Name: t.Name, ReadQueues: int32(t.ReadQueues), WriteQueues: int32(t.WriteQueues),
		Perm: int32(t.Perm), Order: t.Order}
	return awaitDone(ctx, func(done func(*broker.Error)) { core.PutTopic(cb.caller(c), spec, done) })
}

// DeleteTopic deletes the topic on the broker, then its route on the name
// servers (as wheelctl topic delete).
func (cb *consoleBackend) DeleteTopic(ctx context.Context, c console.Credentials, topic string) error {
	core, err := cb.core()
	if err != nil {
		return err
	}
	if err := awaitDone(ctx, func(done func(*broker.Error)) { core.DeleteTopic(cb.caller(c), topic, done) }); err != nil {
		return err
	}
	s := cb.session(c)
	defer s.Close()
	var errs []error
	for _, ns := range cb.n.broker.cfg.NameServers {
		if err := s.DeleteTopicInNamesrv(ctx, ns, topic); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Groups reads the groups stage's published snapshot, keeping for a
// non-admin account the groups it may SUB on (as Topics).
func (cb *consoleBackend) Groups(_ context.Context, c console.Credentials) ([]console.Group, error) {
	if cb.n.broker == nil {
		return nil, fmt.Errorf("this process runs no broker")
	}
	may := cb.mayRead(c, auth.GroupNeed)
	tab := cb.n.broker.pipe.Groups().Load()
	subs := cb.n.broker.pipe.Subscriptions()
	out := make([]console.Group, 0, len(tab.Groups))
	for name, g := range tab.Groups {
		if may(name) {
			out = append(out, console.Group{Name: name, ConsumeEnable: g.ConsumeEnable, Broadcast: g.ConsumeBroadcastEnable,
				Model: subs.MessageModel(name), Orderly: g.ConsumeMessageOrderly, RetryMax: int(g.RetryMaxTimes),
				System: meta.IsSystemGroup(name)})
		}
	}
	return out, nil
}

func (cb *consoleBackend) GroupDetail(ctx context.Context, c console.Credentials, group string) (console.GroupDetail, error) {
	d := console.GroupDetail{Group: console.Group{Name: group}}
	addr, err := cb.addr()
	if err != nil {
		return d, err
	}
	s := cb.session(c)
	defer s.Close()
	if g, ok := cb.n.broker.pipe.Groups().Get(group); ok && cb.mayRead(c, auth.GroupNeed)(group) {
		d.Group = console.Group{Name: group, ConsumeEnable: g.ConsumeEnable, Broadcast: g.ConsumeBroadcastEnable,
			Model: cb.n.broker.pipe.Subscriptions().MessageModel(group), Orderly: g.ConsumeMessageOrderly,
			RetryMax: int(g.RetryMaxTimes), System: meta.IsSystemGroup(group)}
	}
	conns, err := s.Connections(ctx, addr, group)
	if err != nil {
		return d, err
	}
	d.ConsumeType, d.Model, d.Topics = conns.ConsumeType, conns.MessageModel, conns.Topics
	for _, cl := range conns.Clients {
		d.Clients = append(d.Clients, console.Client{ID: cl.ClientID, Addr: cl.ClientAddr, Language: cl.Language, Version: cl.Version})
	}
	st, err := s.ConsumeStats(ctx, addr, group, "")
	if err != nil {
		if admin.IsCode(err, remoting.SubscriptionNotExist) || admin.IsCode(err, 206) {
			return d, nil // no offsets yet
		}
		return d, err
	}
	d.Tps = st.ConsumeTps
	for mq, p := range st.Queues {
		d.Queues = append(d.Queues, console.QueueLag{Topic: mq.Topic, Broker: mq.BrokerName, ID: mq.QueueID,
			BrokerOffset: p.BrokerOffset, ConsumerOffset: p.ConsumerOffset, Lag: max(p.BrokerOffset-p.ConsumerOffset, 0),
			LastTimestampMs: p.LastTimestamp})
	}
	sort.Slice(d.Queues, func(i, j int) bool {
		a, b := d.Queues[i], d.Queues[j]
		if a.Topic != b.Topic {
			return a.Topic < b.Topic
		}
		return a.ID < b.ID
	})
	return d, nil
}

func (cb *consoleBackend) ResetGroup(ctx context.Context, c console.Credentials, group, topic string, at time.Time) error {
	addr, err := cb.addr()
	if err != nil {
		return err
	}
	s := cb.session(c)
	defer s.Close()
	_, err = s.ResetOffsets(ctx, addr, group, topic, at.UnixMilli(), -1, -1)
	return err
}

func (cb *consoleBackend) CancelTimer(ctx context.Context, c console.Credentials, _, offsetMsgID string) error {
	return cb.cancelTimer(ctx, c, offsetMsgID)
}

// FindMessages finds by offset message id (VIEW_MESSAGE_BY_ID), message
// id or key (QUERY_MESSAGE on the topic and the timer topic) or queue
// offset (a pull reader's ReadQueue: a pull would make a group), then
// works out each one's life.
func (cb *consoleBackend) FindMessages(ctx context.Context, c console.Credentials, q console.MessageQuery) ([]console.Message, error) {
	addr, err := cb.addr()
	if err != nil {
		return nil, err
	}
	s := cb.session(c)
	defer s.Close()
	var recs []message.Record
	switch {
	case q.ByOffset:
		recs, err = cb.readQueue(ctx, c, q.Topic, q.Queue, q.Offset)
	case q.ID != "":
		if _, off, perr := message.ParseOffsetMsgID(q.ID); perr == nil {
			var r message.Record
			if r, err = s.ViewMessage(ctx, addr, off); err == nil {
				recs = append(recs, r)
			}
		}
		if len(recs) == 0 && q.Topic != "" {
			recs, err = queryBoth(ctx, s, addr, admin.MessageQuery{Topic: q.Topic, Key: q.ID, Unique: true})
		} else if len(recs) == 0 && err == nil {
			err = fmt.Errorf("%q is not an offset message id: give the topic for a msgId (UNIQ_KEY)", q.ID)
		}
	default:
		recs, err = queryBoth(ctx, s, addr, admin.MessageQuery{Topic: q.Topic, Key: q.Key})
	}
	if err != nil {
		return nil, err
	}
	recs = oneEntryPerMessage(recs)
	out := make([]console.Message, 0, len(recs))
	for _, r := range recs {
		out = append(out, cb.life(ctx, s, addr, r))
	}
	return out, nil
}

// queryBoth asks QUERY_MESSAGE of the topic and of the timer topic.
func queryBoth(ctx context.Context, s *admin.Session, addr string, q admin.MessageQuery) ([]message.Record, error) {
	var out []message.Record
	for _, t := range []string{q.Topic, timer.Topic} {
		q.Topic = t
		a, err := s.QueryMessages(ctx, addr, q)
		if err != nil {
			return out, err
		}
		out = append(out, a.Records...)
	}
	return out, nil
}

// readQueue reads the message at one queue offset from a pull reader
// (pull.ReadQueue: no group, no statistics, nothing remembered), once the
// account may SUB on the topic.
func (cb *consoleBackend) readQueue(ctx context.Context, c console.Credentials, topic string, queue int, offset int64) ([]message.Record, error) {
	if !cb.mayRead(c, auth.TopicNeed)(topic) {
		return nil, fmt.Errorf("this account may not SUB on %s", topic)
	}
	st := cb.n.broker.pipe.Stage(pull.StageName)
	if st == nil {
		return nil, fmt.Errorf("the pull stage is not running")
	}
	type answer struct {
		rec []byte
		err error
	}
	ch := make(chan answer, 1)
	st.Send(&pull.ReadQueue{Pos: pull.QueuePos{Topic: topic, QueueID: int32(queue), Offset: offset},
		Reply: func(rec []byte, err error) { ch <- answer{bytes.Clone(rec), err} }})
	select {
	case a := <-ch:
		if a.err != nil {
			return nil, a.err
		}
		r, _, err := message.Decode(a.rec)
		if err != nil {
			return nil, fmt.Errorf("%s queue %d offset %d: %w", topic, queue, offset, err)
		}
		return []message.Record{r}, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("read %s queue %d offset %d: %w", topic, queue, offset, ctx.Err())
	}
}

// life works out what became of a record: stored, dispatched into its
// queue, for a timer its due time and whether it was written back or
// cancelled, and which groups consumed it.
func (cb *consoleBackend) life(ctx context.Context, s *admin.Session, addr string, r message.Record) console.Message {
	props := message.DecodeProperties(r.Properties)
	m := console.Message{Topic: r.Topic, Broker: addr, Queue: int(r.QueueID), QueueOffset: r.QueueOffset,
		CommitLogOffset: r.PhysicalOffset, BornAt: time.UnixMilli(r.BornTimestamp), StoredAt: time.UnixMilli(r.StoreTimestamp),
		Properties: readableProps(props), Body: r.Body, MsgID: props[message.PropUniqKey], OffsetMsgID: message.OffsetMsgID(r.StoreHost, r.PhysicalOffset)}
	m.Life = append(m.Life, console.Event{At: m.StoredAt, What: "stored", Note: fmt.Sprintf("in %s at CommitLog offset %d", r.Topic, r.PhysicalOffset)})
	m.Life = append(m.Life, console.Event{What: "dispatched", Note: fmt.Sprintf("queue %d offset %d", r.QueueID, r.QueueOffset)})
	realTopic := props[message.PropRealTopic]
	if dueS, ok := props[message.PropTimerOutMS]; ok && r.Topic == timer.Topic {
		dueMs, _ := strconv.ParseInt(dueS, 10, 64)
		due := time.UnixMilli(dueMs)
		m.Life = append(m.Life, console.Event{At: due, What: "timer due", Note: "in the timer wheel, for " + realTopic})
		written, cancelled := false, false
		if uniq := m.MsgID; uniq != "" {
			rel, _ := queryBoth(ctx, s, addr, admin.MessageQuery{Topic: realTopic, Key: uniq, Unique: true})
			for _, x := range rel {
				xp := message.DecodeProperties(x.Properties)
				switch {
				case x.Topic == realTopic && xp[message.PropUniqKey] == uniq && !written:
					written = true
					m.Life = append(m.Life, console.Event{At: time.UnixMilli(x.StoreTimestamp), What: "written back",
						Note: fmt.Sprintf("to %s queue %d offset %d", x.Topic, x.QueueID, x.QueueOffset)})
					m.Life = append(m.Life, cb.consumers(ctx, s, addr, x.Topic, int(x.QueueID), x.QueueOffset)...)
				case xp[message.PropTimerDelUniqKey] == realTopic+"+"+uniq && !cancelled:
					cancelled = true
					m.Life = append(m.Life, console.Event{At: time.UnixMilli(x.StoreTimestamp), What: "cancelled",
						Note: "cancel stored, offsetMsgId " + message.OffsetMsgID(x.StoreHost, x.PhysicalOffset)})
				}
			}
		}
		m.TimerPending = !written && !cancelled && due.After(time.Now())
		if m.TimerPending {
			m.Life = append(m.Life, console.Event{What: "pending", Note: "due in " + time.Until(due).Round(time.Millisecond).String()})
		}
		return m
	}
	m.Life = append(m.Life, cb.consumers(ctx, s, addr, r.Topic, int(r.QueueID), r.QueueOffset)...)
	return m
}

// consumers are the "consumed by" events of a message in a queue.
func (cb *consoleBackend) consumers(ctx context.Context, s *admin.Session, addr, topic string, queue int, offset int64) []console.Event {
	groups, err := s.ConsumedBy(ctx, addr, topic)
	if err != nil {
		return []console.Event{{What: "consumers unknown", Note: err.Error()}}
	}
	if len(groups) == 0 {
		return []console.Event{{What: "not consumed", Note: "no group reads " + topic}}
	}
	var out []console.Event
	for _, g := range groups {
		off, found, err := s.ConsumerOffset(ctx, addr, g, topic, queue)
		switch {
		case err != nil:
			out = append(out, console.Event{What: "consumed by " + g + "?", Note: err.Error()})
		case found && off > offset:
			out = append(out, console.Event{What: "consumed by " + g, Note: fmt.Sprintf("its offset is %d", off)})
		default:
			out = append(out, console.Event{What: "not yet consumed by " + g})
		}
	}
	return out
}

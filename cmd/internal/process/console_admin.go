package process

// The console's topic and group lists and topic changes: the stages'
// published snapshots and the broker API (actors/broker), whose Authorizer
// decides each call as it decides the remoting requests'.

import (
	"context"
	"fmt"
	"net/netip"
	"strings"

	"github.com/wheelmq/wheelmq/actors/broker"
	"github.com/wheelmq/wheelmq/cmd/internal/console"
	"github.com/wheelmq/wheelmq/netloop/auth"
	"github.com/wheelmq/wheelmq/storage/meta"
)

// Topics reads the topics stage's published snapshot (what
// GET_ALL_TOPIC_CONFIG answers, without encoding 10,000 topics to JSON and
// back), keeping for a non-admin account the topics it may SUB on: the
// broker serves GET_ALL_TOPIC_CONFIG to admins only.
// storedMessages is what topic's queues hold now: the sum over its queues
// of max - min offset, by the broker API's QueueBounds (lock-free).
func storedMessages(core *broker.Broker, c broker.Caller, topic string, queues int32) int64 {
	var n int64
	for q := range queues {
		if lo, hi, err := core.QueueBounds(c, broker.QueueRef{Topic: topic, QueueID: q}); err == nil {
			n += max(hi-lo, 0)
		}
	}
	return n
}

func (cb *consoleBackend) Topics(_ context.Context, c console.Credentials) ([]console.Topic, error) {
	if cb.n.broker == nil {
		return nil, fmt.Errorf("this process runs no broker")
	}
	may, caller := cb.mayRead(c, auth.TopicNeed), cb.caller(c)
	tab := cb.n.broker.pipe.Topics().Load().Topics
	out := make([]console.Topic, 0, len(tab))
	for name, tc := range tab {
		if !may(name) {
			continue
		}
		out = append(out, console.Topic{Name: name, ReadQueues: int(tc.ReadQueueNums), WriteQueues: int(tc.WriteQueueNums),
			Perm: int(tc.Perm), Order: tc.Order, System: isSystemTopic(name, int(tc.TopicSysFlag)) || cb.brokerTopic(name),
			Messages: storedMessages(cb.n.broker.core, caller, name, max(tc.ReadQueueNums, tc.WriteQueueNums))})
	}
	return out, nil
}

// mayRead returns whether c's account may SUB on a named resource (always
// without ACL, and for an admin).
func (cb *consoleBackend) mayRead(c console.Credentials, need func(string, auth.Perm) auth.Need) func(string) bool {
	g := cb.guard()
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
	return core.DeleteTopicRoute(ctx, cb.caller(c), topic)
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

func (cb *consoleBackend) CancelTimer(ctx context.Context, c console.Credentials, _, offsetMsgID string) error {
	return cb.cancelTimer(ctx, c, offsetMsgID)
}

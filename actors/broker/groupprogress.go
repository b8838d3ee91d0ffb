package broker

// Group administration: a group's consumer connections
// (GET_CONSUMER_CONNECTION_LIST), the groups reading a topic
// (QUERY_TOPIC_CONSUME_BY_WHO) and the reset of its offsets by time
// (INVOKE_BROKER_TO_RESET_OFFSET), for the remoting codec and the console
// alike.

import (
	"slices"
	"sync/atomic"

	"github.com/wheelmq/wheelmq/actors/clients"
	"github.com/wheelmq/wheelmq/actors/offsets"
	"github.com/wheelmq/wheelmq/actors/pull"
	"github.com/wheelmq/wheelmq/storage/adminbody"
)

// Connections is a group's consumer connections as its online members
// registered them.
type Connections struct {
	// Online is false when no member of the group is connected (Body is
	// then empty).
	Online bool
	Body   adminbody.ConsumerConnection
}

// ConsumerConnections answers a group's consumer connections (SUB on the
// group).
func (b *Broker) ConsumerConnections(c Caller, group string, done func(*Connections, *Error)) {
	if err := b.authorize(c, Need{Kind: KindGroup, Name: group, Perm: Sub}); err != nil {
		done(nil, err)
		return
	}
	st, e := b.stageFor(clients.StageName)
	if e != nil {
		done(nil, e)
		return
	}
	st.Send(&clients.ConsumerConnection{Group: group, FailFunc: failed("consumer connections", func(e *Error) { done(nil, e) }),
		Reply: func(cc adminbody.ConsumerConnection, online bool) { done(&Connections{Online: online, Body: cc}, nil) }})
}

// TopicConsumers answers the groups that read a topic (SUB on the topic):
// those whose online consumers subscribe to it and those with committed
// offsets for it, sorted.
func (b *Broker) TopicConsumers(c Caller, topic string, done func([]string, *Error)) {
	if err := b.authorize(c, Need{Kind: KindTopic, Name: topic, Perm: Sub}); err != nil {
		done(nil, err)
		return
	}
	st, e := b.stageFor(offsets.StageName)
	if e != nil {
		done(nil, e)
		return
	}
	online := b.p.Subscriptions().GroupsOf(topic)
	st.Send(&offsets.TopicGroups{Topic: topic, FailFunc: failed("groups of "+topic, func(e *Error) { done(nil, e) }),
		Reply: func(committed []string) {
			out := append(append(make([]string, 0, len(online)+len(committed)), online...), committed...)
			slices.Sort(out)
			done(slices.Compact(out), nil)
		}})
}

// ResetRequest moves a group's offsets of a topic.
type ResetRequest struct {
	Group, Topic string
	// Timestamp: every queue (or QueueID) moves to its first message
	// stored at or after it (epoch ms; -1: the queue's end).
	Timestamp int64
	// QueueID limits the reset to one queue (-1: every readable queue).
	QueueID int32
	// Offset, with QueueID >= 0, is that queue's new offset (-1: by
	// Timestamp).
	Offset int64
}

// ResetDone is a reset made: the codec of the group's consumers tells
// them (ServeResets).
type ResetDone struct {
	Group, Topic string
	Timestamp    int64
	Offsets      map[int32]int64
}

// resetState holds who is told of resets.
type resetState struct {
	notify atomic.Pointer[func(ResetDone)]
}

// ServeResets sets who is told of every reset once it is made: the
// remoting codec, which tells the group's live consumers at once
// (RESET_CONSUMER_CLIENT_OFFSET) and answers their parked pulls. Safe from
// any goroutine.
func (b *Broker) ServeResets(notify func(ResetDone)) { b.resets.notify.Store(&notify) }

// ResetOffsets moves a group's offsets of a topic (admin) the way
// RocketMQ 5 does by default (useServerSideResetOffset): the offsets are
// committed at once and the next pull of each queue gets OFFSET_MOVED to
// its new offset. done gets the new offsets by queue.
func (b *Broker) ResetOffsets(c Caller, r ResetRequest, done func(map[int32]int64, *Error)) {
	if err := b.authorize(c, Need{Kind: KindBroker, Perm: Admin}); err != nil {
		done(nil, err)
		return
	}
	cfg, ok := b.p.Topics().Get(r.Topic)
	if !ok {
		done(nil, Errorf(TopicNotFound, "Topic %s does not exist", r.Topic))
		return
	}
	if _, ok := b.p.Groups().Get(r.Group); !ok {
		done(nil, Errorf(GroupNotFound, "Group %s does not exist", r.Group))
		return
	}
	if r.QueueID >= 0 && r.Offset != -1 {
		var minOff, maxOff int64
		if cq := b.p.Store().Queues.Lookup(r.Topic, r.QueueID); cq != nil {
			minOff, maxOff = cq.MinOffset(), cq.MaxOffset()
		}
		if r.Offset < minOff || r.Offset > maxOff {
			done(nil, Errorf(Internal, "Target offset %d not in consume queue range [%d-%d]", r.Offset, minOff, maxOff))
			return
		}
		b.applyReset(r, map[int32]int64{r.QueueID: r.Offset}, done)
		return
	}
	queues := []int32{r.QueueID}
	if r.QueueID < 0 {
		queues = make([]int32, cfg.ReadQueueNums)
		for i := range queues {
			queues[i] = int32(i)
		}
	}
	if len(queues) == 0 {
		done(nil, Errorf(Internal, "No queues to reset."))
		return
	}
	st, e := b.stageFor(pull.StageName)
	if e != nil {
		done(nil, e)
		return
	}
	st.Send(&pull.SearchQueues{Topic: r.Topic, Queues: queues, Timestamp: r.Timestamp,
		FailFunc: failed("reset offsets", func(e *Error) { done(nil, e) }),
		Reply:    func(offs map[int32]int64) { b.applyReset(r, offs, done) }})
}

// applyReset commits the new offsets, answers, and tells ServeResets'
// listener.
func (b *Broker) applyReset(r ResetRequest, offs map[int32]int64, done func(map[int32]int64, *Error)) {
	st, e := b.stageFor(offsets.StageName)
	if e != nil {
		done(nil, e)
		return
	}
	st.Send(&offsets.Reset{Group: r.Group, Topic: r.Topic, Offsets: offs,
		FailFunc: failed("reset offsets", func(e *Error) { done(nil, e) }),
		Done: func() {
			done(offs, nil)
			if n := b.resets.notify.Load(); n != nil {
				(*n)(ResetDone{Group: r.Group, Topic: r.Topic, Timestamp: r.Timestamp, Offsets: offs})
			}
		}})
}

package broker

// A group's progress per queue: the queue's max offset, the group's
// consumer offset and the lag between them, laid out once from the offsets
// stage's GroupOffsets for GET_CONSUME_STATS (208), the console's group
// page and, with the POP figures, the console's clients page.

import (
	"maps"
	"slices"

	"github.com/wheelmq/wheelmq/actors/offsets"
	"github.com/wheelmq/wheelmq/actors/pop"
	"github.com/wheelmq/wheelmq/actors/pull"
	"github.com/wheelmq/wheelmq/actors/stats"
)

// ConsumeStatsRequest asks a group's progress.
type ConsumeStatsRequest struct {
	Group string
	// Topics limits the answer to these topics (none: every topic the
	// group has offsets for).
	Topics []string
	// Listed says Topics is an explicit list (RocketMQ's topicList): its
	// topics are answered even when the group's online consumers do not
	// subscribe to them.
	Listed bool
	// Pop adds the POP figures: each queue's deliveries in flight and
	// retrying, the POP position as the consumer offset when it is
	// further than the committed one, and the topics the group pops or
	// its online members subscribe to even without committed offsets
	// (every topic with offsets is answered, subscribed or not).
	Pop bool
}

// QueueProgress is a group's progress in one queue.
type QueueProgress struct {
	Topic   string
	QueueID int32
	// BrokerOffset is the queue's max offset, ConsumerOffset the group's
	// committed one (0 when none; with Pop, the POP position when
	// further), PullOffset the next the group pulls, Lag BrokerOffset
	// minus ConsumerOffset (never below 0).
	BrokerOffset, ConsumerOffset, PullOffset, Lag int64
	// LastTimestamp is the store time of the last consumed message (0:
	// none).
	LastTimestamp int64
	// InFlight are POP deliveries not acked yet and Retrying those whose
	// invisibility ran out, waiting to be offered again (with Pop): both
	// are within Lag (a POP group's offset moves once every message below
	// is acked).
	InFlight, Retrying int
}

// ConsumeStats is a group's progress: per queue, sorted by topic and
// queue, and its consume rate (messages/s).
type ConsumeStats struct {
	Queues []QueueProgress
	TPS    float64
}

// ConsumeStats answers a group's progress (SUB on the group and on each
// topic asked for). Like RocketMQ, a topic not listed is left out when the
// group is online without subscribing to it (unless r.Pop), and a topic
// the broker does not have is left out. done runs on a stage's goroutine.
func (b *Broker) ConsumeStats(c Caller, r ConsumeStatsRequest, done func(*ConsumeStats, *Error)) {
	needs := []Need{{Kind: KindGroup, Name: r.Group, Perm: Sub}}
	for _, t := range r.Topics {
		needs = append(needs, Need{Kind: KindTopic, Name: t, Perm: Sub})
	}
	if err := b.authorize(c, needs...); err != nil {
		done(nil, err)
		return
	}
	ost, e := b.stageFor(offsets.StageName)
	if e != nil {
		done(nil, e)
		return
	}
	pst, e := b.stageFor(pull.StageName)
	if e != nil {
		done(nil, e)
		return
	}
	fail := failed("consume stats of "+r.Group, func(e *Error) { done(nil, e) })
	finish := func(committed map[string]map[int32]int64, fl map[pop.QueueKey]pop.QueueInFlight) {
		cs, positions := b.consumeStats(r, committed, fl)
		pst.Send(&pull.StoreTimes{Group: r.Group, Positions: positions, FailFunc: fail,
			Reply: func(got []pull.QueueProgress) {
				for i, pr := range got {
					if i < len(cs.Queues) {
						q := &cs.Queues[i]
						q.LastTimestamp = max(pr.StoreTime, 0)
						q.PullOffset = max(q.ConsumerOffset, pr.Pulled)
					}
				}
				done(cs, nil)
			}})
	}
	ost.Send(&offsets.GroupOffsets{Group: r.Group, Topics: r.Topics, FailFunc: fail,
		Reply: func(committed map[string]map[int32]int64) {
			if !r.Pop {
				finish(committed, nil)
				return
			}
			popSt, perr := b.stageFor(pop.StageName)
			if perr != nil { // no POP stage: nothing in flight
				finish(committed, nil)
				return
			}
			popSt.Send(&pop.InFlight{Group: r.Group, FailFunc: func(error) { finish(committed, nil) },
				Reply: func(fl map[pop.QueueKey]pop.QueueInFlight) { finish(committed, fl) }})
		}})
}

// consumeStatsTopics is the topics a progress answers, sorted: those with
// committed offsets (with r.Pop or r.Listed, or while no online member
// subscribes to anything, all of them; else the subscribed ones), and
// with r.Pop those subscribed and those with POP state (within r.Topics
// when given).
func (b *Broker) consumeStatsTopics(r ConsumeStatsRequest, committed map[string]map[int32]int64,
	fl map[pop.QueueKey]pop.QueueInFlight) []string {
	subscribed := b.p.Subscriptions().Topics(r.Group)
	names := map[string]bool{}
	for t := range committed {
		if r.Pop || r.Listed || len(subscribed) == 0 || slices.Contains(subscribed, t) {
			names[t] = true
		}
	}
	if r.Pop {
		for _, t := range subscribed {
			names[t] = true
		}
		for k := range fl {
			names[k.Topic] = true
		}
		if len(r.Topics) > 0 {
			maps.DeleteFunc(names, func(t string, _ bool) bool { return !slices.Contains(r.Topics, t) })
		}
	}
	return slices.Sorted(maps.Keys(names))
}

// consumeStats lays out a group's progress from its committed offsets
// (on the offsets stage) and its POP state (fl, with r.Pop), with the
// positions of the last consumed messages whose store times the pull
// stage reads, one per queue.
func (b *Broker) consumeStats(r ConsumeStatsRequest, committed map[string]map[int32]int64,
	fl map[pop.QueueKey]pop.QueueInFlight) (*ConsumeStats, []pull.QueuePos) {
	cs := &ConsumeStats{}
	var positions []pull.QueuePos
	snap := b.p.Stats().Load()
	for _, t := range b.consumeStatsTopics(r, committed, fl) {
		cfg, ok := b.p.Topics().Get(t)
		if !ok {
			continue
		}
		for q := range cfg.ReadQueueNums {
			var maxOff int64
			if cq := b.p.Store().Queues.Lookup(t, q); cq != nil {
				maxOff = cq.MaxOffset()
			}
			consumer := max(committed[t][q], 0) // absent: 0, as RocketMQ reports it
			f := fl[pop.QueueKey{Topic: t, QueueID: q}]
			// The POP position, before its commit reached the offsets
			// stage (a group's first pops start at the queue's end).
			consumer = max(consumer, f.Committed)
			cs.Queues = append(cs.Queues, QueueProgress{Topic: t, QueueID: q, BrokerOffset: maxOff,
				ConsumerOffset: consumer, PullOffset: consumer, Lag: max(maxOff-consumer, 0),
				InFlight: f.InFlight, Retrying: f.Retrying})
			positions = append(positions, pull.QueuePos{Topic: t, QueueID: q, Offset: consumer - 1})
		}
		cs.TPS += snap.GroupGet[stats.GroupTopic{Group: r.Group, Topic: t}]
	}
	return cs, positions
}

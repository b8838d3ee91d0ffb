package broker

// Topic administration: PutTopic (UPDATE_AND_CREATE_TOPIC), DeleteTopic
// (DELETE_TOPIC_IN_BROKER) and TopicStats (GET_TOPIC_STATS_INFO), for the
// remoting admin codes and the console alike.

import (
	"errors"
	"fmt"

	"github.com/wheelmq/wheelmq/actors/offsets"
	"github.com/wheelmq/wheelmq/actors/pull"
	"github.com/wheelmq/wheelmq/actors/topics"
	"github.com/wheelmq/wheelmq/storage/meta"
)

// maxTopicQueues bounds a topic's read and write queue counts.
const maxTopicQueues = 1024

// TopicSpec is a topic to create or update.
type TopicSpec struct {
	Name        string
	ReadQueues  int32
	WriteQueues int32
	Perm        int32
	// Filter is the topic filter type ("": SINGLE_TAG).
	Filter string
	Order  bool
	// SysFlag is the topic's system flag (batch creation carries it).
	SysFlag int32
	// Attributes is RocketMQ's attribute modification list
	// ("+message.type=FIFO,-key"; "": none).
	Attributes string
}

// CheckTopicSpec validates a topic to create or update and returns its
// configuration and parsed attribute modifications. mixed says whether the
// broker allows message.type=MIXED (RocketMQ's enableMixedMessageType).
func CheckTopicSpec(s TopicSpec, mixed bool) (meta.TopicConfig, map[string]string, *Error) {
	if err := meta.ValidateTopic(s.Name); err != nil {
		return meta.TopicConfig{}, nil, Errorf(BadRequest, "%v", err)
	}
	if meta.IsSystemTopic(s.Name) {
		return meta.TopicConfig{}, nil, Errorf(BadRequest, "the topic[%s] is conflict with system topic", s.Name)
	}
	if s.ReadQueues <= 0 || s.WriteQueues <= 0 || s.ReadQueues > maxTopicQueues || s.WriteQueues > maxTopicQueues {
		return meta.TopicConfig{}, nil, Errorf(BadRequest, "queue counts must be in 1..%d, got read %d write %d",
			maxTopicQueues, s.ReadQueues, s.WriteQueues)
	}
	filter := s.Filter
	if filter == "" {
		filter = "SINGLE_TAG"
	}
	mods, err := meta.ParseAttributes(s.Attributes)
	if err != nil {
		return meta.TopicConfig{}, nil, Errorf(BadRequest, "%v", err)
	}
	if meta.MessageType(mods["+"+meta.AttrMessageType]) == meta.MessageTypeMixed && !mixed {
		return meta.TopicConfig{}, nil, Errorf(BadRequest,
			"MIXED message type is not supported. (set enableMixedMessageType / --mixed-message-type to allow it)")
	}
	return meta.TopicConfig{TopicName: s.Name, ReadQueueNums: s.ReadQueues, WriteQueueNums: s.WriteQueues,
		Perm:            s.Perm & (meta.PermRead | meta.PermWrite | meta.PermInherit | meta.PermPriority),
		TopicFilterType: filter, Order: s.Order, TopicSysFlag: s.SysFlag}, mods, nil
}

// topicPutError is the *Error of a topic update the stage refused:
// BadRequest for its attributes, Internal otherwise.
func topicPutError(err error) *Error {
	if errors.Is(err, meta.ErrAttribute) {
		return &Error{Status: BadRequest, Remark: err.Error(), Err: err}
	}
	return Wrap(Internal, "update topic", err)
}

// PutTopic creates or updates a topic (admin). done runs once the name
// servers serve the topic's route (bounded by the pipeline's route wait):
// admin tools ask for the route right after.
func (b *Broker) PutTopic(c Caller, s TopicSpec, done func(*Error)) {
	if err := b.authorize(c, Need{Kind: KindBroker, Perm: Admin}); err != nil {
		done(err)
		return
	}
	cfg, mods, e := CheckTopicSpec(s, b.p.Settings().MixedMessageType)
	if e != nil {
		done(e)
		return
	}
	b.p.Stage(topics.StageName).Send(&topics.Put{Config: cfg, Attributes: mods, Done: func(err error) {
		if err != nil {
			done(topicPutError(err))
			return
		}
		b.p.AwaitRoutes([]string{s.Name}, func() { done(nil) })
	}})
}

// DeleteTopic deletes a topic and its consumer offsets (admin). The
// offsets go first, so that no journal record of them can follow the
// topic's delete record in the log (offsets.DropTopic).
func (b *Broker) DeleteTopic(c Caller, name string, done func(*Error)) {
	if err := b.authorize(c, Need{Kind: KindBroker, Perm: Admin}); err != nil {
		done(err)
		return
	}
	if name == "" {
		done(Errorf(BadRequest, "The specified topic is blank."))
		return
	}
	if meta.IsSystemTopic(name) {
		done(Errorf(BadRequest, "The topic[%s] is conflict with system topic.", name))
		return
	}
	tp := b.p.Stage(topics.StageName)
	b.p.Stage(offsets.StageName).Send(&offsets.DropTopic{Topic: name, Done: func() {
		tp.Send(&topics.Delete{Topic: name, Done: func(err error) {
			if err != nil {
				done(Wrap(Internal, "delete topic "+name, err))
				return
			}
			done(nil)
		}})
	}})
}

// QueueStats is one queue's offsets and the store time of its newest
// message.
type QueueStats struct {
	QueueID int32
	Min     int64
	Max     int64
	// LastStoreMs is the store time of the queue's newest message (0:
	// none).
	LastStoreMs int64
}

// TopicStats answers the topic's queues, by queue id, and its current put
// rate (messages/s).
type TopicStats struct {
	Queues []QueueStats
	PutTPS float64
}

// TopicStats reads a topic's queue offsets (SUB on the topic).
func (b *Broker) TopicStats(c Caller, topic string, done func(*TopicStats, *Error)) {
	if err := b.authorize(c, Need{Kind: KindTopic, Name: topic, Perm: Sub}); err != nil {
		done(nil, err)
		return
	}
	cfg, ok := b.p.Topics().Get(topic)
	if !ok {
		done(nil, Errorf(TopicNotFound, "topic[%s] not exist", topic))
		return
	}
	n := max(cfg.ReadQueueNums, cfg.WriteQueueNums)
	st := &TopicStats{Queues: make([]QueueStats, n), PutTPS: b.p.Stats().Load().TopicPut[topic]}
	positions := make([]pull.QueuePos, n)
	for q := range n {
		st.Queues[q].QueueID = q
		if cq := b.p.Store().Queues.Lookup(topic, q); cq != nil {
			st.Queues[q].Min, st.Queues[q].Max = cq.MinOffset(), cq.MaxOffset()
		}
		positions[q] = pull.QueuePos{Topic: topic, QueueID: q, Offset: st.Queues[q].Max - 1}
	}
	b.p.Stage(pull.StageName).Send(&pull.StoreTimes{Positions: positions,
		FailFunc: func(err error) { done(nil, Wrap(Unavailable, fmt.Sprintf("topic %s stats", topic), err)) },
		Reply: func(got []pull.QueueProgress) {
			for q, pr := range got {
				if q < len(st.Queues) {
					st.Queues[q].LastStoreMs = max(pr.StoreTime, 0)
				}
			}
			done(st, nil)
		}})
}

// PutTopics creates or updates several topics in one change of the table
// (admin), each checked as PutTopic checks it; the first bad one refuses
// them all, naming it. done runs once the name servers serve them all.
func (b *Broker) PutTopics(c Caller, specs []TopicSpec, done func(*Error)) {
	if err := b.authorize(c, Need{Kind: KindBroker, Perm: Admin}); err != nil {
		done(err)
		return
	}
	if len(specs) == 0 {
		done(Errorf(BadRequest, "topic config list is empty"))
		return
	}
	mixed := b.p.Settings().MixedMessageType
	cfgs := make([]meta.TopicConfig, 0, len(specs))
	names := make([]string, 0, len(specs))
	mods := make(map[string]map[string]string, len(specs))
	for i, s := range specs {
		cfg, m, e := CheckTopicSpec(s, mixed)
		if e != nil {
			done(Errorf(e.Status, "topic %d (%s): %s", i, s.Name, e.Remark))
			return
		}
		mods[cfg.TopicName] = m
		cfgs, names = append(cfgs, cfg), append(names, cfg.TopicName)
	}
	b.p.Stage(topics.StageName).Send(&topics.PutMany{Configs: cfgs, Attributes: mods, Done: func(err error) {
		if err != nil {
			done(topicPutError(err))
			return
		}
		b.p.AwaitRoutes(names, func() { done(nil) })
	}})
}

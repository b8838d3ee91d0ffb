package broker

// The consumption family's shared rules: which group may consume, a
// group's configuration (auto-created on first use), subscription filters
// (the one-model-per-group rule: requestmode.go).

import (
	"sync"

	"github.com/wheelmq/wheelmq/actors/groups"
	"github.com/wheelmq/wheelmq/actors/pull"
	"github.com/wheelmq/wheelmq/actors/stage"
	"github.com/wheelmq/wheelmq/storage/meta"
)

// consumeState is the Broker's share for the consumption calls.
type consumeState struct {
	once    sync.Once
	filters *pull.FilterCache
}

// Filter returns the compiled subscription filter of an expression (TAG
// or SQL92), cached; BadFilter when it does not parse.
func (b *Broker) Filter(exprType, expr string, version int64) (pull.Filter, *Error) {
	b.consume.once.Do(func() { b.consume.filters = pull.NewFilterCache(0) })
	f, err := b.consume.filters.Get(exprType, expr, version)
	if err != nil {
		return pull.Filter{}, &Error{Status: BadFilter, Remark: "parse the consumer's subscription failed", Err: err}
	}
	return f, nil
}

// GroupConfig returns a consumer group's configuration. An unknown group
// is created in the background when auto-creation is on (the defaults
// answer meanwhile, as a Java broker creates it on the spot); without
// auto-creation it is GroupNotFound.
func (b *Broker) GroupConfig(name string) (meta.SubscriptionGroupConfig, *Error) {
	if cfg, ok := b.p.Groups().Get(name); ok {
		return cfg, nil
	}
	if !b.p.Settings().AutoCreateGroup {
		return meta.SubscriptionGroupConfig{}, Errorf(GroupNotFound, "subscription group [%s] does not exist", name)
	}
	if st := b.p.Stage(groups.StageName); st != nil {
		st.Send(&groups.Ensure{Names: []string{name}})
	}
	return meta.NewSubscriptionGroupConfig(name), nil
}

// ConsumeAllowed refuses a group that may not consume now: an unknown
// group without auto-creation, consumeEnable off, or a broadcasting group
// whose consumeBroadcastEnable is off (RocketMQ's PullMessageProcessor
// checks). It answers the group's configuration.
func (b *Broker) ConsumeAllowed(group string) (meta.SubscriptionGroupConfig, *Error) {
	cfg, err := b.GroupConfig(group)
	switch {
	case err != nil:
		return cfg, err
	case !cfg.ConsumeEnable:
		return cfg, Errorf(Forbidden, "subscription group no permission, %s", group)
	case !cfg.ConsumeBroadcastEnable && b.p.Subscriptions().MessageModel(group) == "BROADCASTING":
		return cfg, Errorf(Forbidden, "the consumer group[%s] can not consume by broadcast way", group)
	}
	return cfg, nil
}

// readableTopic checks a consumption call's topic and queue as RocketMQ's
// processors do, and returns the topic's queue count. what names the call
// in the refusal ("pulling", "peeking").
func (b *Broker) readableTopic(topic string, queueID int32, what string, c Caller) (int32, *Error) {
	cfg, ok := b.p.Topics().Get(topic)
	if !ok {
		return 0, Errorf(TopicNotFound, "topic[%s] not exist, apply first please!", topic)
	}
	if cfg.Perm&meta.PermRead == 0 {
		return 0, Errorf(Forbidden, "the topic[%s] %s message is forbidden", topic, what)
	}
	queues := max(cfg.ReadQueueNums, cfg.WriteQueueNums)
	if queueID < -1 || queueID >= queues {
		return 0, Errorf(BadRequest, "queueId[%d] is illegal, topic:[%s] topicConfig.readQueueNums:[%d] consumer:[%s]",
			queueID, topic, cfg.ReadQueueNums, c.Remote)
	}
	return queues, nil
}

// consumeNeeds is what consuming group's topic needs of the caller's
// account (the remoting port's rule for the POP and offset codes: SUB on
// both).
func consumeNeeds(group, topic string) []Need {
	return []Need{{Kind: KindTopic, Name: topic, Perm: Sub}, {Kind: KindGroup, Name: group, Perm: Sub}}
}

// stageFor returns the named stage, or Unavailable when it is missing or
// down.
func (b *Broker) stageFor(name string) (*stage.Stage, *Error) {
	st := b.p.Stage(name)
	if st == nil {
		return nil, Errorf(Unavailable, "[STAGE_DOWN]no %s stage", name)
	}
	if d := st.Down(); d != nil {
		return nil, Errorf(Unavailable, "[STAGE_DOWN]%v", d)
	}
	return st, nil
}

// failed turns a stage's failure into an Internal error for done.
func failed(what string, done func(*Error)) stage.FailFunc {
	return func(err error) { done(Wrap(Internal, what, err)) }
}

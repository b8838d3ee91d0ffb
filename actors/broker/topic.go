package broker

// Topic configuration and topic auto-creation: the one rule of both
// protocols (a remoting send through TBW102, a gRPC route or send).

import (
	"errors"
	"strings"

	"github.com/wheelmq/wheelmq/actors/topics"
	"github.com/wheelmq/wheelmq/storage/meta"
)

// AutoCreateTopic is the template topic whose configuration a topic
// created by its first send inherits (RocketMQ's TBW102,
// TopicValidator.AUTO_CREATE_TOPIC_KEY_TOPIC).
const AutoCreateTopic = "TBW102"

// AutoCreateConfig is the configuration a missing topic gets when a send
// (or a gRPC route query, which stands for the first send) creates it,
// and false when it may not be created:
//   - a group's %RETRY% or %DLQ% topic: always, one read-write queue;
//   - any other: only with auto-creation on (--auto-create-topic) and a
//     template defaultTopic the broker has with the inherit permission;
//     the topic takes the template's write queue count, capped at
//     defaultQueueNums when that is positive, and its permission without
//     the inherit bit.
//
// A remoting send names its template and cap (defaultTopic,
// defaultTopicQueueNums); a gRPC client names none and gets
// AutoCreateTopic uncapped (TBW102's queue count, --default-topic-queues).
func (b *Broker) AutoCreateConfig(topic, defaultTopic string, defaultQueueNums int32) (meta.TopicConfig, bool) {
	cfg := meta.TopicConfig{TopicName: topic, TopicFilterType: "SINGLE_TAG", Perm: meta.PermRead | meta.PermWrite}
	if strings.HasPrefix(topic, meta.RetryGroupTopicPrefix) || strings.HasPrefix(topic, meta.DLQGroupTopicPrefix) {
		cfg.ReadQueueNums, cfg.WriteQueueNums = 1, 1
		return cfg, true
	}
	if !b.p.Settings().AutoCreateTopic || defaultTopic == "" {
		return cfg, false
	}
	def, ok := b.p.Topics().Get(defaultTopic)
	if !ok || def.Perm&meta.PermInherit == 0 {
		return cfg, false
	}
	n := def.WriteQueueNums
	if defaultQueueNums > 0 && defaultQueueNums < n {
		n = defaultQueueNums
	}
	cfg.ReadQueueNums, cfg.WriteQueueNums = n, n
	cfg.Perm = def.Perm &^ meta.PermInherit
	return cfg, true
}

// authorizeTopic checks that c may look at topic: PUB or SUB on it (a
// %RETRY% or %DLQ% topic: on its group), as a route lookup at a name
// server needs.
func (b *Broker) authorizeTopic(c Caller, topic string) *Error {
	err := b.authorize(c, Need{Kind: KindTopic, Name: topic, Perm: Sub})
	if err != nil && b.authorize(c, Need{Kind: KindTopic, Name: topic, Perm: Pub}) == nil {
		return nil
	}
	return err
}

// Topic answers topic's configuration through done. With create, a topic
// the broker does not have is made by AutoCreateConfig's rule (template
// AutoCreateTopic) and done runs once the name servers serve its route
// (pipeline.AwaitRoutes: bounded by --route-wait), so that a client that
// asks a name server or another broker right after finds it. The caller
// needs PUB or SUB on the topic, and PUB to create it (as the send that
// would). Refusals: BadRequest for a name that is not a topic's, Forbidden
// for a caller without the permission, and for a topic clients may not
// write (a system topic) when create asks to make it,
// TopicNotFound when the topic is missing and may not be made (or this
// broker is a replica: only the master makes topics), Internal when the
// topics stage fails. done runs on the topics stage's or the registrar's
// goroutine, or the caller's for an answer found at once; it must not
// block.
func (b *Broker) Topic(c Caller, topic string, create bool, done func(meta.TopicConfig, error)) {
	if err := meta.ValidateTopic(topic); err != nil {
		done(meta.TopicConfig{}, Wrap(BadRequest, "topic name", err))
		return
	}
	if cfg, ok := b.p.Topics().Get(topic); ok {
		if err := b.authorizeTopic(c, topic); err != nil {
			done(meta.TopicConfig{}, err)
			return
		}
		done(cfg, nil)
		return
	}
	notFound := func(why string) {
		done(meta.TopicConfig{}, Errorf(TopicNotFound, "topic %s does not exist%s", topic, why))
	}
	if !create {
		notFound("")
		return
	}
	if err := b.authorize(c, Need{Kind: KindTopic, Name: topic, Perm: Pub}); err != nil {
		done(meta.TopicConfig{}, err)
		return
	}
	if meta.IsClientWriteForbidden(topic) {
		done(meta.TopicConfig{}, Errorf(Forbidden, "topic %s is a system topic: clients may not create it", topic))
		return
	}
	if !b.p.Role().Get().IsMaster() {
		notFound(" here, and a replica creates no topic (its master does)")
		return
	}
	auto, ok := b.AutoCreateConfig(topic, AutoCreateTopic, 0)
	if !ok {
		notFound(" and topics are not auto-created (--auto-create-topic, or the template TBW102 is missing or not inheritable)")
		return
	}
	b.p.Stage(topics.StageName).Send(&topics.Ensure{Config: auto, Done: func(cfg meta.TopicConfig, err error) {
		if err != nil {
			st := Internal
			if errors.Is(err, meta.ErrAttribute) {
				st = BadRequest
			}
			done(meta.TopicConfig{}, Wrap(st, "create topic "+topic, err))
			return
		}
		b.log.Info().Str("topic", topic).Int32("queues", cfg.WriteQueueNums).Msg("topic auto-created")
		b.p.AwaitRoutes([]string{topic}, func() { done(cfg, nil) })
	}})
}

package broker

import (
	"math/rand/v2"
	"strings"
	"time"

	"github.com/wheelmq/wheelmq/actors/groups"
	"github.com/wheelmq/wheelmq/storage/meta"
)

// PutGroup creates or replaces a subscription group's configuration
// (admin): UPDATE_AND_CREATE_SUBSCRIPTIONGROUP and wheelctl's group
// create. The name is checked as RocketMQ's TopicValidator does and the
// retry policy (groupRetryPolicy) as meta.ParseRetryPolicy does, so that
// a group never holds a policy its retries cannot follow.
func (b *Broker) PutGroup(c Caller, cfg meta.SubscriptionGroupConfig, done func(*Error)) {
	if err := b.authorize(c, Need{Kind: KindBroker, Perm: Admin}); err != nil {
		done(err)
		return
	}
	if err := meta.ValidateGroup(cfg.GroupName); err != nil {
		done(Errorf(BadRequest, "%s", strings.TrimSuffix(err.Error(), ": "+meta.ErrInvalidGroup.Error())))
		return
	}
	if _, err := meta.ParseRetryPolicy(cfg.GroupRetryPolicy); err != nil {
		done(Errorf(BadRequest, "group %s: %v", cfg.GroupName, err))
		return
	}
	b.p.Stage(groups.StageName).Send(&groups.Put{Config: cfg, Done: func(err error) {
		if err != nil {
			done(Wrap(Internal, "put group "+cfg.GroupName, err))
			return
		}
		done(nil)
	}})
}

// RetryPolicy is group's retry policy (the default for a group the broker
// does not know, or whose stored policy no longer parses).
func (b *Broker) RetryPolicy(group string) meta.RetryPolicy {
	cfg, _ := b.Group(Caller{}, group)
	p, err := meta.ParseRetryPolicy(cfg.GroupRetryPolicy)
	if err != nil {
		p, _ = meta.ParseRetryPolicy(nil)
	}
	return p
}

// RetryDelay is how long a message of group consumed reconsumeTimes times
// waits before its next delivery, by the group's retry policy (jitter
// drawn here), and whether the group set a policy of its own (else the
// caller keeps RocketMQ's delay levels, which the default policy equals).
func (b *Broker) RetryDelay(group string, reconsumeTimes int32) (time.Duration, bool) {
	p := b.RetryPolicy(group)
	return p.Delay(reconsumeTimes, rand.Float64()), !p.Default
}

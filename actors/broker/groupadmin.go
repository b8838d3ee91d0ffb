package broker

import (
	"strings"

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

package broker

import (
	"errors"
	"strings"
	"time"

	"github.com/wheelmq/wheelmq/actors/pop"
	"github.com/wheelmq/wheelmq/actors/pop/mode"
	"github.com/wheelmq/wheelmq/actors/role"
	"github.com/wheelmq/wheelmq/storage/meta"
)

// SetRequestMode is SET_MESSAGE_REQUEST_MODE (401): the consumption model
// of (Group, Topic), PULL or POP (RocketMQ's
// SetMessageRequestModeRequestBody; "" is PULL, the Java default).
type SetRequestMode struct {
	Group, Topic     string
	Mode             string
	PopShareQueueNum int32
}

// SetRequestMode sets the consumption model of (req.Group, req.Topic)
// with RocketMQ's checks (a retry topic Forbidden, an unknown topic
// TopicNotFound, an unknown group GroupNotFound). The POP engine persists
// it, publishes it and has it journaled for the replicas; done gets nil
// once that is done.
func (b *Broker) SetRequestMode(c Caller, req SetRequestMode, done func(*Error)) {
	if req.Mode == "" {
		req.Mode = meta.RequestModePull
	}
	if req.Mode != meta.RequestModePull && req.Mode != meta.RequestModePop {
		done(Errorf(BadRequest, "mode %q is neither PULL nor POP", req.Mode))
		return
	}
	if strings.HasPrefix(req.Topic, meta.RetryGroupTopicPrefix) {
		done(Errorf(Forbidden, "retry topic is not allowed to set mode"))
		return
	}
	if b.p == nil || b.p.Pop() == nil {
		done(Errorf(Unavailable, "the broker has no POP stage"))
		return
	}
	if !b.p.Pop().IsMaster() {
		done(Errorf(NotMaster, "message request modes are set on the group's master; this broker is a replica"))
		return
	}
	if _, ok := b.p.Topics().Get(req.Topic); !ok {
		done(Errorf(TopicNotFound, "topic[%s] not exist", req.Topic))
		return
	}
	if _, ok := b.p.Groups().Get(req.Group); !ok {
		done(Errorf(GroupNotFound, "subscription group does not exist"))
		return
	}
	st := b.p.Stage(pop.StageName)
	if st == nil {
		done(Errorf(Unavailable, "the POP stage is not running"))
		return
	}
	log := b.log
	st.Send(&pop.SetMode{
		Mode: meta.RequestMode{Topic: req.Topic, ConsumerGroup: req.Group, Mode: req.Mode, PopShareQueueNum: req.PopShareQueueNum},
		Done: func(err error) {
			switch {
			case err == nil:
				log.Info().Str("group", req.Group).Str("topic", req.Topic).Str("mode", req.Mode).
					Stringer("protocol", c.Protocol).Str("account", c.Account).Str("remote", c.Remote.String()).
					Msg("message request mode set")
				done(nil)
			case errors.Is(err, pop.ErrNotMaster):
				done(Wrap(NotMaster, "set message request mode", err))
			default:
				done(Wrap(Internal, "set message request mode", err))
			}
		},
	})
}

// modes is the POP engine's table (nil before the pipeline started).
func (b *Broker) modes() *mode.Table {
	if b.p == nil {
		return nil
	}
	if e := b.p.Pop(); e != nil {
		return e.Modes()
	}
	return nil
}

// RequestMode is the model SET_MESSAGE_REQUEST_MODE set for (group,
// topic): meta.RequestModePull, meta.RequestModePop, or "" when none was.
func (b *Broker) RequestMode(group, topic string) string {
	if t := b.modes(); t != nil {
		return t.Mode(group, topic)
	}
	return ""
}

// PullAllowed decides whether a pull of (group, topic), suspended up to
// suspend, may be served under the one-model-at-a-time rule (package
// actors/pop/mode); an allowed pull holds the group for PULL. It takes no
// lock: codecs call it on every pull.
func (b *Broker) PullAllowed(group, topic string, suspend time.Duration) *Error {
	if t := b.modes(); t != nil {
		if err := b.promotionPending(t); err != nil {
			return err
		}
		return modeError(t.PullAllowed(group, topic, suspend, time.Now()))
	}
	return nil
}

// promotionPending refuses as busy a pull or a pop on a replicated
// group's master whose POP engine has not yet dropped what it knew as a
// replica (nothing in flight) for the old master's journal: between the
// role's change, which clients see at once, and the engine's Reload, the
// table would let a pull take messages in flight to POP consumers.
func (b *Broker) promotionPending(t *mode.Table) *Error {
	if b.p.Role() == nil {
		return nil
	}
	st := b.p.Role().Get()
	if st.Kind != role.Master || st.Fenced || t.ReloadedFor() == st.Epoch {
		return nil
	}
	return Errorf(Busy, "promoted to master at epoch %d: the POP state is being rebuilt from the journal "+
		"(a group is consumed by one model at a time), retry", st.Epoch)
}

// PopAllowed decides whether a pop of (group, topic) may be served under
// the one-model-at-a-time rule.
func (b *Broker) PopAllowed(group, topic string) *Error {
	if t := b.modes(); t != nil {
		if err := b.promotionPending(t); err != nil {
			return err
		}
		return modeError(t.PopAllowed(group, topic, time.Now()))
	}
	return nil
}

// modeError turns the table's refusal into the API's.
func modeError(r *mode.Refusal) *Error {
	switch {
	case r == nil:
		return nil
	case r.Busy:
		return &Error{Status: Busy, Remark: r.Remark}
	default:
		return &Error{Status: Forbidden, Remark: r.Remark}
	}
}

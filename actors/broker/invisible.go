package broker

// ChangeInvisible: a delivery's new deadline and receipt handle.

import (
	"time"

	"github.com/wheelmq/wheelmq/actors/pop"
)

// ChangeRequest moves the deadline of the delivery Handle names to now +
// Invisible.
type ChangeRequest struct {
	Group, Topic string
	Handle       pop.Handle
	Invisible    time.Duration
}

// ChangeInvisible moves a delivery's deadline; done gets its new handle
// (the old one is refused from then on), or HandleExpired when it is no
// longer in flight.
func (b *Broker) ChangeInvisible(c Caller, r *ChangeRequest, done func(pop.Handle, *Error)) {
	err := b.authorize(c, consumeNeeds(r.Group, r.Topic)...)
	if err == nil {
		err = checkInvisible(c, r.Invisible, true)
	}
	if err == nil && !b.Ready() {
		err = Errorf(Busy, "[STARTING]broker is starting, try again")
	}
	if err == nil {
		if _, ok := b.p.Topics().Get(r.Topic); !ok {
			err = Errorf(TopicNotFound, "topic[%s] not exist, apply first please!", r.Topic)
		}
	}
	var st interface{ Send(any) }
	if err == nil {
		st, err = b.stageFor(pop.StageName)
	}
	if err != nil {
		done(pop.Handle{}, err)
		return
	}
	h := r.Handle
	st.Send(&pop.Change{Group: r.Group, Topic: r.Topic, QueueID: h.QueueID, Offset: h.Offset, Handle: &h,
		InvisibleMs: r.Invisible.Milliseconds(), FailFunc: failed("change invisible time", func(e *Error) { done(pop.Handle{}, e) }),
		Reply: func(code int32, remark string, nh pop.Handle) {
			if code != pop.CodeSuccess {
				done(pop.Handle{}, engineError(code, remark))
				return
			}
			done(nh, nil)
		}})
}

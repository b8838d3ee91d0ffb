package broker

// Lite receives for a caller that must not wait (docs/lite.md, "Over
// remoting"): RocketMQ 5.5's POP_LITE_MESSAGE is answered from a gnet
// event loop, which must never block, so the long poll of LiteReceive
// runs on a goroutine of its own and the answer comes back through done.

import (
	"context"
	"time"

	"github.com/wheelmq/wheelmq/actors/recovery"
)

// MaxLitePopNums bounds a lite pop's batch (RocketMQ 5.5's
// PopLiteMessageProcessor: 32).
const MaxLitePopNums = 32

// LitePop is LiteReceive answered through done, on a goroutine of its
// own: it ends by r.Poll (capped by MaxPopPoll), or within a second of
// CloseLite, whichever is first; a panic in it is logged and answered
// Internal. done is called once. The topic must be a LITE topic and the
// batch 1 to MaxLitePopNums (BadRequest).
func (b *Broker) LitePop(c Caller, r *LiteReceiveRequest, done func([]LiteDelivery, *Error)) {
	if r.Max < 1 || r.Max > MaxLitePopNums {
		done(nil, Errorf(BadRequest, "the pop lite message's num must be 1 to %d", MaxLitePopNums))
		return
	}
	cfg, ok := b.p.Topics().Get(r.Topic)
	if !ok {
		done(nil, Errorf(TopicNotFound, "topic [%s] not exist, apply first please!", r.Topic))
		return
	}
	if !LiteTopic(cfg) {
		done(nil, Errorf(BadRequest, "the topic [%s] message type not match: it is not a LITE topic", r.Topic))
		return
	}
	s := &b.lite
	s.mu.Lock()
	open := s.open
	s.mu.Unlock()
	if !open {
		done(nil, Errorf(Unavailable, "lite topics are not served"))
		return
	}
	answered := false
	recovery.Go(nil, func(p *recovery.Panic) {
		recovery.Log(b.log.With().Str("group", r.Group).Str("topic", r.Topic).Logger(), p, "lite pop")
		if !answered {
			done(nil, Errorf(Internal, "lite pop failed in the broker; see its log"))
		}
	}, func() {
		// LiteReceive looks again at least every second and answers
		// Unavailable once CloseLite closed the lite state.
		ctx, cancel := context.WithTimeout(context.Background(), min(r.Poll, MaxPopPoll)+time.Second)
		defer cancel()
		got, err := b.LiteReceive(ctx, c, r)
		answered = true
		done(got, err)
	})
}

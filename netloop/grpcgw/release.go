package grpcgw

// Deliveries that never reached the client come back soon: a receive whose
// stream write failed, or whose client left (deadline, cancel) before the
// broker's pop answered, hands its messages back with an invisibility of
// releaseInvisible instead of leaving them invisible for the whole
// invisible time the client asked for (60 s for an auto-renewing push
// consumer), as RocketMQ's proxy nacks them.

import (
	"time"

	"github.com/wheelmq/wheelmq/actors/broker"
	"github.com/wheelmq/wheelmq/actors/pop"
)

// releaseInvisible is how soon a delivery that never reached its client is
// offered again (the proxy's 1 s).
const releaseInvisible = time.Second

// release hands res's deliveries back to the broker (see above): each
// moves its deadline to now + releaseInvisible, without waiting. s may be
// nil (no handle is held then); a handle the session's renewer holds is
// dropped from it and its current form released.
func (g *Gateway) release(s *session, res *broker.PopResult, group, topic string, c broker.Caller) {
	if res == nil || g.opts.Broker == nil {
		return
	}
	for i := range res.Messages {
		d := &res.Messages[i]
		h := d.Handle
		if s != nil {
			cur := s.renew.take(clientHandle(d.Handle.String(), d.Record.PhysicalOffset))
			if r, err := parseClientHandle(cur); err == nil {
				h = r.handle()
			}
		}
		g.m.released.Inc()
		g.opts.Broker.ChangeInvisible(c, &broker.ChangeRequest{Group: group, Topic: topic, Handle: h, Invisible: releaseInvisible},
			func(_ pop.Handle, err *broker.Error) {
				if err != nil {
					g.log.Debug().Str("group", group).Str("topic", topic).Str("error", err.Error()).
						Msg("grpc: an undelivered message could not be released; it comes back at its deadline")
				}
			})
	}
}

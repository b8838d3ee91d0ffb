package router

import (
	"strconv"

	"github.com/wheelmq/wheelmq/actors/recovery"
	"github.com/wheelmq/wheelmq/netloop"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// Failure stays local: a panic while a request is served (on a gnet event
// loop, or a TLS connection's goroutine) is recovered here and becomes
// that request's SYSTEM_ERROR answer, a count in
// wheelmq_handler_panics_total{protocol="remoting",kind=<request code>}
// and one error line with the request code and the stack. The connection
// and the broker serve on.

// recoverRequest is deferred around a request's dispatch in OnCommand.
func (r *Router) recoverRequest(c *netloop.Conn, cmd *remoting.Command) {
	p := recovery.Recovered(recover())
	if p == nil {
		return
	}
	kind := r.panicKind(cmd.Code)
	r.panics.WithLabelValues("remoting", kind).Inc()
	recovery.Log(r.log.With().Str("remote", c.RemoteAddr()).Int32("opaque", cmd.Opaque).Logger(), p, "remoting request "+kind)
	// The answer goes through the usual path; should it panic too, the
	// request stays unanswered (the client times out) and the loop lives.
	if p2 := recovery.Catch(func() {
		r.refuse(c, cmd, refuse(remoting.SystemError, "[INTERNAL_ERROR]request code %d failed in the broker; see its log", cmd.Code))
	}); p2 != nil {
		recovery.Log(r.log, p2, "remoting panic answer "+kind)
	}
}

// OnFrame implements netloop.FrameHandler: the plain-send hot path
// (fastsend.go). A panic in it is recovered and counted and the frame is
// declined: the hot path acts only at its very end, so the general path
// (guarded by recoverRequest) serves the frame, and answers it.
func (r *Router) OnFrame(c *netloop.Conn, frame []byte) (served bool) {
	defer func() {
		if p := recovery.Recovered(recover()); p != nil {
			r.panics.WithLabelValues("remoting", "fastsend").Inc()
			recovery.Log(r.log.With().Str("remote", c.RemoteAddr()).Logger(), p, "remoting plain send")
			served = false
		}
	}()
	return r.onFrame(c, frame)
}

// panicKind labels a request code: a served code, or "other" (a client
// sending random codes cannot grow the label set).
func (r *Router) panicKind(code int32) string {
	if _, ok := r.routes[code]; ok {
		return strconv.Itoa(int(code))
	}
	return "other"
}

package nsrvcodec

import (
	"time"

	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/namesrv"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// Stage is where Serve sends the decoded requests: the name server's
// registry stage (actors/stage.Stage).
type Stage interface {
	// Send queues msg (a *namesrv.Request) to the stage.
	Send(msg any)
}

// Serve decodes cmd, a request that came over the name-server connection
// conn, and hands it to the registry stage st; reply receives the response
// (on the stage's goroutine, or on the caller's when the request is
// refused before it reaches the stage), never for a oneway request. reply
// must not block. A refusal of the decoder is logged as the stage logs
// its own.
func Serve(st Stage, cmd *remoting.Command, conn uint64, log *zerolog.Logger, reply func(*remoting.Command)) {
	call, err := Decode(cmd)
	if err != nil {
		logRefusal(log, cmd, err)
		if !cmd.IsOneway() {
			reply(Refusal(cmd, err))
		}
		return
	}
	req := &namesrv.Request{Call: call, Conn: conn}
	if !cmd.IsOneway() {
		req.Reply = func(ans namesrv.Answer) { reply(Encode(cmd, ans)) }
	}
	st.Send(req)
}

// Handle serves cmd on reg directly, at now over connection conn (0:
// unknown), and returns the response (nil for a nil request's: a
// SYSTEM_ERROR of an empty command): decode, Registry.Serve, encode, as
// the stage does it but without its logs and GET_NAMESRV_CONFIG (the
// actor's: REQUEST_CODE_NOT_SUPPORTED here). For tests and tools that hold
// a Registry.
func Handle(reg *namesrv.Registry, cmd *remoting.Command, now time.Time, conn uint64) *remoting.Command {
	if cmd == nil {
		return remoting.NewResponse(&remoting.Command{}, remoting.SystemError, "namesrv: nil request")
	}
	call, err := Decode(cmd)
	if err != nil {
		return Refusal(cmd, err)
	}
	return Encode(cmd, reg.Serve(call, now, conn))
}

// logRefusal logs a request the decoder refused, as the registry stage
// logs the refusals it makes.
func logRefusal(log *zerolog.Logger, cmd *remoting.Command, err error) {
	if log == nil {
		return
	}
	if err == errUnsupported {
		log.Debug().Int32("code", cmd.Code).Msg("namesrv: request code not supported")
		return
	}
	ev := log.Warn().Int32("code", cmd.Code).Stringer("status", namesrv.StatusOf(err)).Str("remark", err.Error())
	if addr := cmd.Field(fieldBrokerAddr); addr != "" {
		ev = ev.Str("brokerAddr", addr)
	}
	ev.Msg("namesrv: request refused")
}

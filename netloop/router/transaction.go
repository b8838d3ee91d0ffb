package router

// END_TRANSACTION (37): a codec over the broker API's EndTransaction
// (actors/broker transaction.go, which holds the rules and the send-path
// half of transactional messages).
//   - producerGroup, tranStateTableOffset, commitLogOffset, commitOrRollback
//     or msgId missing, not numeric or negative          -> 29 INVALID_PARAMETER
//   - commitOrRollback 0 (state unknown)                 -> no answer (the
//     broker checks the transaction later)
//   - commitOrRollback other than 0, 8 (commit), 12 (rollback) -> 29
//   - the broker's answer, in router/status.go's codes.

import (
	"strings"

	"github.com/wheelmq/wheelmq/actors/broker"
	"github.com/wheelmq/wheelmq/netloop"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/message"
)

// Transaction types of END_TRANSACTION's commitOrRollback.
const (
	endUnknown  = int64(message.SysFlagTransactionNotType)
	endCommit   = int64(message.SysFlagTransactionCommit)
	endRollback = int64(message.SysFlagTransactionRollback)
)

func (r *Router) handleEndTransaction(c *netloop.Conn, cmd *remoting.Command) *Refusal {
	p := fieldParser{cmd: cmd}
	group := p.str("producerGroup")
	halfOffset := p.int("tranStateTableOffset", true, 0)
	clOffset := p.int("commitLogOffset", true, 0)
	kind := p.intBits("commitOrRollback", true, 0, 32)
	p.str("msgId")
	if ref := p.refusal(); ref != nil {
		return ref
	}
	if halfOffset < 0 || clOffset < 0 {
		return refuse(remoting.InvalidParameter, "tranStateTableOffset %d and commitLogOffset %d must be >= 0", halfOffset, clOffset)
	}
	fromCheck := strings.EqualFold(cmd.Field("fromTransactionCheck"), "true")
	switch kind {
	case endUnknown:
		r.log.Debug().Str("remote", c.RemoteAddr()).Str("group", group).Int64("half_offset", halfOffset).
			Bool("from_check", fromCheck).Str("remark", cmd.Remark).Msg("end transaction with unknown state: left for a check")
		r.settle(c) // no answer
		return nil
	case endCommit, endRollback:
	default:
		return refuse(remoting.InvalidParameter, "commitOrRollback field wrong: %d (want 0, 8 or 12)", kind)
	}
	r.core.EndTransaction(callerOf(c, cmd), &broker.EndRequest{ProducerGroup: group, HalfOffset: halfOffset,
		CommitLogOffset: clOffset, Commit: kind == endCommit, FromCheck: fromCheck, Authorize: r.endAuthorizer(c, cmd)},
		func(err *broker.Error) {
			if ref := refusalOf(err); ref != nil {
				r.reply(c, cmd, ref.Code, ref.Remark)
				return
			}
			r.reply(c, cmd, remoting.Success, "")
		})
	return nil
}

// endAuthorizer is the deferred check of END_TRANSACTION, run by the
// transaction stage with the half message's topic (nil: no ACL).
func (r *Router) endAuthorizer(c *netloop.Conn, cmd *remoting.Command) func(topic string) *broker.Error {
	if r.guard == nil {
		return nil
	}
	return func(topic string) *broker.Error {
		if ref := r.deferredCheck(c, cmd, topic); ref != nil {
			return broker.Errorf(broker.Forbidden, "%s", ref.Remark)
		}
		return nil
	}
}

package router

// END_TRANSACTION (37), and the send-path half of transactional messages.
//
// END_TRANSACTION, checked here, ended by the transaction stage
// (actors/txcheck):
//   - producerGroup, tranStateTableOffset, commitLogOffset, commitOrRollback
//     or msgId missing, not numeric or negative          -> 29 INVALID_PARAMETER
//   - commitOrRollback 0 (state unknown)                 -> no answer (the
//     broker checks the transaction later)
//   - commitOrRollback other than 0, 8 (commit), 12 (rollback) -> 29
//   - no half message at commitLogOffset                 -> 1 "Find prepared transaction message failed"
//   - PGROUP differs                                      -> 1 "The producer group wrong"
//   - tranStateTableOffset differs                        -> 1 "The transaction state table offset wrong"
//   - not from a check, CHECK_IMMUNITY_TIME_IN_SECONDS set and the
//     transaction older than it                           -> 604 ILLEGAL_OPERATION
//   - already ended the other way                         -> 1
//   - committed message illegal (e.g. its timer)          -> 13
//   - stored                                              -> 0 SUCCESS (also for a repeat)
//
// A half message (property TRAN_MSG=true, or sysFlag TRANSACTION_PREPARED)
// is stored in RMQ_SYS_TRANS_HALF_TOPIC queue 0 with REAL_TOPIC, REAL_QID,
// __transactionId__ (= UNIQ_KEY) and PGROUP (the header's producer group
// when the client did not set it), transaction bits cleared; its timer
// properties are checked now but applied at commit. Batches cannot carry
// one (13).

import (
	"maps"
	"strconv"
	"strings"

	"github.com/wheelmq/wheelmq/actors/txcheck"
	"github.com/wheelmq/wheelmq/netloop"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/message"
	"github.com/wheelmq/wheelmq/storage/meta"
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
	r.txSt.Send(&txcheck.End{ProducerGroup: group, HalfOffset: halfOffset, CommitLogOffset: clOffset,
		Commit: kind == endCommit, FromCheck: fromCheck,
		Authorize: r.endAuthorizer(c, cmd),
		Reply:     func(code int32, remark string) { r.reply(c, cmd, code, remark) }})
	return nil
}

// endAuthorizer is the deferred check of END_TRANSACTION, run by the
// transaction stage with the half message's topic (nil: no ACL).
func (r *Router) endAuthorizer(c *netloop.Conn, cmd *remoting.Command) func(topic string) (int32, string) {
	if r.guard == nil {
		return nil
	}
	return func(topic string) (int32, string) {
		if ref := r.deferredCheck(c, cmd, topic); ref != nil {
			return ref.Code, ref.Remark
		}
		return remoting.Success, ""
	}
}

// isHalfMessage reports whether a single message is a transaction's half
// message: TRAN_MSG parses as true (RocketMQ's rule, except for the retries
// of old clients that carry a delay level) or the sysFlag says PREPARED.
func isHalfMessage(h *sendHeader, props map[string]string) bool {
	if message.TransactionType(h.sysFlag) == message.SysFlagTransactionPrepared {
		return true
	}
	tran, _ := strconv.ParseBool(props[message.PropTranMsg])
	if !tran {
		return false
	}
	level, _ := strconv.Atoi(props[message.PropDelay])
	return !(h.reconsumeTimes > 0 && level > 0)
}

// toHalfTopic validates a half message's timer properties (applied at
// commit) and rewrites props and h for the half queue.
func (r *Router) toHalfTopic(h *sendHeader, props map[string]string, topic string, queueID int32, nowMs int64) (
	string, int32, *Refusal) {
	if ref := r.stagesDown(r.txSts); ref != nil {
		return "", 0, ref // stored now, nobody would end or check it
	}
	if plan := r.planTimer(maps.Clone(props), nowMs); plan.code != 0 {
		return "", 0, &Refusal{Code: plan.code, Remark: plan.remark}
	}
	props[message.PropRealTopic] = topic
	props[message.PropRealQueueID] = strconv.Itoa(int(queueID))
	if props[message.PropProducerGroup] == "" {
		props[message.PropProducerGroup] = h.producerGroup
	}
	h.sysFlag &^= message.SysFlagTransactionRollback
	return meta.TopicTransHalf, 0, nil
}

package broker

// Transactions: the send-path half of a half message, and EndTransaction.
//
// A half message (property TRAN_MSG=true, or sysFlag TRANSACTION_PREPARED)
// is stored in RMQ_SYS_TRANS_HALF_TOPIC queue 0 with REAL_TOPIC, REAL_QID,
// __transactionId__ (= UNIQ_KEY) and PGROUP (the request's producer group
// when the message does not name one), transaction bits cleared; its timer
// properties are checked now but applied at commit. Batches cannot carry
// one.
//
// EndTransaction, ended by the transaction stage (actors/txcheck):
//   - offsets negative                                 -> BadRequest
//   - no half message at CommitLogOffset, PGROUP or the half offset
//     differ, already ended the other way              -> Internal
//   - not from a check, CHECK_IMMUNITY_TIME_IN_SECONDS set and the
//     transaction older than it                        -> Conflict
//   - committed message illegal (e.g. its timer)       -> IllegalMessage
//   - stored                                           -> OK (also for a repeat)

import (
	"maps"
	"strconv"

	"github.com/wheelmq/wheelmq/actors/txcheck"
	"github.com/wheelmq/wheelmq/storage/message"
	"github.com/wheelmq/wheelmq/storage/meta"
)

// isHalfMessage reports whether a single message is a transaction's half
// message: TRAN_MSG parses as true (RocketMQ's rule, except for the retries
// of old clients that carry a delay level) or the sysFlag says PREPARED.
func isHalfMessage(req *SendRequest, props map[string]string) bool {
	if message.TransactionType(req.SysFlag) == message.SysFlagTransactionPrepared {
		return true
	}
	tran, _ := strconv.ParseBool(props[message.PropTranMsg])
	if !tran {
		return false
	}
	level, _ := strconv.Atoi(props[message.PropDelay])
	return !(req.ReconsumeTimes > 0 && level > 0)
}

// toHalfTopic validates a half message's timer properties (applied at
// commit) and rewrites props and plan for the half queue.
func (b *Broker) toHalfTopic(req *SendRequest, props map[string]string, plan *sendPlan, nowMs int64) *Error {
	if err := stagesDown(b.send.txSts); err != nil {
		return err // stored now, nobody would end or check it
	}
	if _, err := b.PlanTimer(maps.Clone(props), nowMs); err != nil {
		return err
	}
	props[message.PropRealTopic] = plan.topic
	props[message.PropRealQueueID] = strconv.Itoa(int(plan.queueID))
	if props[message.PropProducerGroup] == "" {
		props[message.PropProducerGroup] = req.ProducerGroup
	}
	plan.sysFlag &^= message.SysFlagTransactionRollback
	plan.topic, plan.queueID, plan.half = meta.TopicTransHalf, 0, true
	return nil
}

// EndRequest commits or rolls back a transaction's half message.
type EndRequest struct {
	ProducerGroup string
	// HalfOffset is the half message's offset in the half queue.
	HalfOffset int64
	// CommitLogOffset is where the half message is stored.
	CommitLogOffset int64
	// Commit: commit (true) or roll back (false).
	Commit bool
	// FromCheck: the producer answers the broker's check.
	FromCheck bool
	// Authorize, when set, decides with the half message's topic whether
	// the caller may end it (a codec's own ACL check); an *Error is
	// answered as it is, nothing changed. Without it the broker's ACL
	// decides (PUB on that topic), unless the caller was checked.
	Authorize func(topic string) *Error
}

// EndTransaction ends a transaction; done runs on the transaction stage's
// goroutine (or the writer's), once.
func (b *Broker) EndTransaction(c Caller, req *EndRequest, done func(*Error)) {
	if req.HalfOffset < 0 || req.CommitLogOffset < 0 {
		done(Errorf(BadRequest, "tranStateTableOffset %d and commitLogOffset %d must be >= 0", req.HalfOffset, req.CommitLogOffset))
		return
	}
	if err := stagesDown(append(b.send.txSts, b.send.writer...)); err != nil {
		done(err)
		return
	}
	end := &txcheck.End{ProducerGroup: req.ProducerGroup, HalfOffset: req.HalfOffset, CommitLogOffset: req.CommitLogOffset,
		Commit: req.Commit, FromCheck: req.FromCheck,
		Reply: func(code int32, remark string) { done(errorOfCode(code, remark)) }}
	auth := req.Authorize
	if auth == nil && b.authz != nil && !c.Checked {
		auth = func(topic string) *Error { return b.authorize(c, pubOn(topic)) }
	}
	if auth != nil {
		end.Authorize = func(topic string) (int32, string) {
			if err := auth(topic); err != nil {
				return codeOf(err.Status), err.Remark
			}
			return 0, ""
		}
	}
	b.send.txSt.Send(end)
}

// The RocketMQ response codes the transaction stage answers with (its
// txcheck.End.Reply), until it answers a Status itself; codecOf is the
// inverse for its Authorize hook. The codecs map Statuses back to their
// own codes (router/status.go gives these same codes for these statuses).
var txCodes = map[int32]Status{
	0: OK, 1: Internal, 2: Busy, 13: IllegalMessage, 14: Unavailable, 16: Forbidden, 17: TopicNotFound,
	29: BadRequest, 604: Conflict,
}

// errorOfCode is the transaction stage's answer as an *Error (nil: OK).
func errorOfCode(code int32, remark string) *Error {
	st, ok := txCodes[code]
	if !ok {
		st = Internal
	}
	if st == OK {
		return nil
	}
	return &Error{Status: st, Remark: remark}
}

// codeOf is the transaction stage's code for st (Internal's for any
// status it does not know).
func codeOf(st Status) int32 {
	for code, s := range txCodes {
		if s == st {
			return code
		}
	}
	return 1
}

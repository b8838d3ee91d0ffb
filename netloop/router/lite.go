package router

// Lite topics over remoting (RocketMQ 5.5; docs/lite.md, "Over
// remoting"), through the broker API's lite calls:
//
//   - LITE_SUBSCRIPTION_CTL (200071): a JSON body {"subscriptionSet":
//     [{"action","clientId","group","topic","liteTopicSet","version",
//     "offsetOption"}]} (LiteSubscriptionCtlRequestBody of
//     LiteSubscriptionDTO); each entry is a SyncLiteSubscription. A body
//     that is missing, not JSON or empty: ILLEGAL_OPERATION; an entry
//     without a client id, group or topic is skipped (as RocketMQ's
//     LiteSubscriptionCtlProcessor); past the quota:
//     LITE_SUBSCRIPTION_QUOTA_EXCEEDED (2018). Subscriptions made on a
//     connection go when it closes.
//   - POP_LITE_MESSAGE (200070): PopLiteMessageRequestHeader (clientId,
//     consumerGroup, topic, maxMsgNum, invisibleTime, pollTime, bornTime,
//     attemptId); the answer is PopLiteMessageResponseHeader (popTime,
//     invisibleTime, reviveQid, orderCountInfo: each message's delivery
//     count less one, ';'-separated) with the stored records as the body,
//     each carrying its receipt handle in POP_CK, and, as RocketMQ stores
//     lite messages, its lite topic's queue in INNER_MULTI_DISPATCH
//     (%LMQ%$<parent>$<lite>) and its offset there in
//     INNER_MULTI_QUEUE_OFFSET; none within the poll: POLLING_TIMEOUT.
//   - ACK_MESSAGE and CHANGE_MESSAGE_INVISIBLETIME whose extraInfo is a
//     lite receipt handle (pop.go) ack or change the lite delivery; the
//     change answers the new handle in extraInfo.

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/wheelmq/wheelmq/actors/broker"
	"github.com/wheelmq/wheelmq/actors/pop"
	"github.com/wheelmq/wheelmq/netloop"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/message"
)

// liteReviveQid is the reviveQid of a lite pop's answer (RocketMQ's
// KeyBuilder.POP_ORDER_REVIVE_QUEUE).
const liteReviveQid = "999999"

// liteLMQ is RocketMQ 5.5's name of a lite topic's queue
// (LiteUtil.toLmqName): %LMQ%$<parent>$<lite>.
func liteLMQ(parent, lite string) string { return "%LMQ%$" + parent + "$" + lite }

// liteCtlBody is RocketMQ 5.5's LiteSubscriptionCtlRequestBody.
type liteCtlBody struct {
	SubscriptionSet []liteCtlEntry `json:"subscriptionSet"`
}

// liteCtlEntry is RocketMQ 5.5's LiteSubscriptionDTO (offsetOption and
// version are read and not used: a group starts a lite topic at its
// oldest message).
type liteCtlEntry struct {
	Action       string   `json:"action"`
	ClientID     string   `json:"clientId"`
	Group        string   `json:"group"`
	Topic        string   `json:"topic"`
	LiteTopicSet []string `json:"liteTopicSet"`
	Version      int64    `json:"version"`
}

// liteCtlActions maps the body's action names to the broker's.
var liteCtlActions = map[string]broker.LiteAction{
	"PARTIAL_ADD":     broker.LitePartialAdd,
	"PARTIAL_REMOVE":  broker.LitePartialRemove,
	"COMPLETE_ADD":    broker.LiteCompleteAdd,
	"COMPLETE_REMOVE": broker.LiteCompleteRemove,
}

// liteConns remembers which (group, client id) subscribed on which
// connection, so that they go when it closes: when the client's latest
// connection closes (a client that came back on a new connection keeps
// what it subscribed there).
type liteConns struct {
	mu    sync.Mutex
	conns map[uint64]map[[2]string]struct{} // connection -> (group, client)
	last  map[[2]string]uint64              // (group, client) -> its latest connection
}

func (l *liteConns) add(conn uint64, group, client string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conns == nil {
		l.conns, l.last = map[uint64]map[[2]string]struct{}{}, map[[2]string]uint64{}
	}
	k := [2]string{group, client}
	if old, ok := l.last[k]; ok && old != conn {
		delete(l.conns[old], k)
	}
	if l.conns[conn] == nil {
		l.conns[conn] = map[[2]string]struct{}{}
	}
	l.conns[conn][k] = struct{}{}
	l.last[k] = conn
}

// take removes conn and returns the clients whose latest connection it
// was.
func (l *liteConns) take(conn uint64) [][2]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out [][2]string
	for k := range l.conns[conn] {
		if l.last[k] == conn {
			delete(l.last, k)
			out = append(out, k)
		}
	}
	delete(l.conns, conn)
	return out
}

// liteConnClosed forgets the lite subscriptions made on a closed
// connection (OnClose).
func (r *Router) liteConnClosed(conn uint64) {
	for _, k := range r.lite.take(conn) {
		r.core.LiteClientGone(k[0], k[1])
	}
}

func (r *Router) handleLiteSubscriptionCtl(c *netloop.Conn, cmd *remoting.Command) *Refusal {
	if len(cmd.Body) == 0 {
		return refuse(remoting.IllegalOperation, "Request body is null.")
	}
	var body liteCtlBody
	if err := json.Unmarshal(cmd.Body, &body); err != nil {
		return refuse(remoting.IllegalOperation, "LiteSubscriptionCtlRequestBody is malformed: %v", err)
	}
	if len(body.SubscriptionSet) == 0 {
		return refuse(remoting.IllegalOperation, "LiteSubscriptionCtlRequestBody is empty.")
	}
	for _, e := range body.SubscriptionSet {
		if _, ok := liteCtlActions[e.Action]; !ok {
			return refuse(remoting.IllegalOperation, "unknown lite subscription action %q", e.Action)
		}
		if ref := r.deferredCheck(c, cmd, e.Topic); ref != nil {
			return ref
		}
	}
	for _, e := range body.SubscriptionSet {
		if e.ClientID == "" || e.Group == "" || e.Topic == "" {
			r.log.Warn().Str("client_id", e.ClientID).Str("group", e.Group).Str("topic", e.Topic).
				Msg("lite subscription entry without a client id, group or topic: skipped")
			continue
		}
		err := r.core.SyncLiteSubscription(callerOf(c, cmd), &broker.LiteSubscription{Action: liteCtlActions[e.Action],
			Topic: e.Topic, Group: e.Group, Client: e.ClientID, Lites: e.LiteTopicSet})
		if err != nil {
			if errors.Is(err.Err, broker.ErrLiteQuota) {
				return refuse(remoting.LiteSubscriptionQuotaExceeded, "%s", err.Remark)
			}
			return refusalOf(err)
		}
		r.lite.add(c.ID(), e.Group, e.ClientID)
	}
	r.reply(c, cmd, remoting.Success, "")
	return nil
}

func (r *Router) handlePopLite(c *netloop.Conn, cmd *remoting.Command) *Refusal {
	p := fieldParser{cmd: cmd}
	client, group, topic := p.str("clientId"), p.str("consumerGroup"), p.str("topic")
	nums := p.intBits("maxMsgNum", true, 0, 32)
	invisibleMs := p.int("invisibleTime", true, 0)
	pollMs := p.int("pollTime", true, 0)
	if ref := p.refusal(); ref != nil {
		return ref
	}
	if client == "" || group == "" || topic == "" {
		return refuse(remoting.InvalidParameter, "the custom fields clientId, consumerGroup and topic must not be empty")
	}
	if invisibleMs <= 0 {
		return refuse(remoting.InvalidParameter, "invisibleTime must be positive, got %d", invisibleMs)
	}
	// A pop registers the client with the lite state as a subscription
	// does (with none yet): it goes with the connection too.
	r.lite.add(c.ID(), group, client)
	popTime := time.Now().UnixMilli()
	r.core.LitePop(callerOf(c, cmd), &broker.LiteReceiveRequest{Group: group, Topic: topic, Client: client,
		Max: int(max(min(nums, broker.MaxLitePopNums+1), 0)), Invisible: invisibleOf(invisibleMs),
		Poll: time.Duration(max(pollMs, 0)) * time.Millisecond},
		func(got []broker.LiteDelivery, err *broker.Error) {
			if err != nil {
				r.refuse(c, cmd, refusalOf(err))
				return
			}
			r.send(c, cmd, r.popLiteResponse(cmd, got, popTime, invisibleMs))
		})
	return nil
}

// popLiteResponse encodes a lite pop's answer.
func (r *Router) popLiteResponse(cmd *remoting.Command, got []broker.LiteDelivery, popTime, invisibleMs int64) *remoting.Command {
	var body []byte
	var counts []string
	for i := range got {
		d := &got[i]
		rec := d.Record
		props := message.AppendProperty(append([]byte(nil), rec.Properties...), pop.PropPopCK, d.Handle)
		// As RocketMQ 5.5 stores a lite message: its lite topic's LMQ and
		// its offset there (a RocketMQ client takes its queue offset from
		// them).
		props = message.AppendProperty(props, message.PropInnerMultiDispatch, liteLMQ(rec.Topic, d.Lite))
		rec.Properties = message.AppendProperty(props, message.PropInnerMultiQueueOffset, strconv.FormatInt(d.Seq, 10))
		b, err := rec.Encode(body)
		if err != nil {
			// A stored record re-encodes; one that does not comes again
			// after its invisible time.
			r.log.Error().Err(err).Str("topic", rec.Topic).Str("liteTopic", d.Lite).Msg("pop lite: re-encode failed")
			continue
		}
		body = b
		counts = append(counts, strconv.Itoa(int(d.Attempt-1)))
	}
	code, remark := remoting.Success, "FOUND"
	if len(counts) == 0 {
		code, remark = pop.CodePollingTimeout, "NO_MESSAGE_IN_QUEUE"
	}
	resp := remoting.NewResponse(cmd, code, remark)
	resp.SetField("popTime", strconv.FormatInt(popTime, 10))
	resp.SetField("invisibleTime", strconv.FormatInt(invisibleMs, 10))
	resp.SetField("reviveQid", liteReviveQid)
	resp.SetField("orderCountInfo", strings.Join(counts, ";"))
	resp.Body = body
	return resp
}

// liteAck acks a lite delivery named by an ACK_MESSAGE's extraInfo.
func (r *Router) liteAck(c *netloop.Conn, cmd *remoting.Command, h ackHeader) *Refusal {
	if err := r.core.LiteAck(callerOf(c, cmd), h.Group, h.ExtraInfo); err != nil {
		return refusalOf(err)
	}
	r.reply(c, cmd, remoting.Success, "")
	return nil
}

// liteChange changes a lite delivery's invisible time; the new handle is
// answered in extraInfo (the old one is stale).
func (r *Router) liteChange(c *netloop.Conn, cmd *remoting.Command, h ackHeader) *Refusal {
	nh, err := r.core.LiteChangeInvisible(callerOf(c, cmd), h.Group, h.ExtraInfo, invisibleOf(h.InvisibleMs), false)
	if err != nil {
		return refusalOf(err)
	}
	resp := remoting.NewResponse(cmd, remoting.Success, "")
	resp.SetField("reviveQid", liteReviveQid)
	resp.SetField("invisibleTime", strconv.FormatInt(h.InvisibleMs, 10))
	resp.SetField("popTime", strconv.FormatInt(time.Now().UnixMilli(), 10))
	resp.SetField("extraInfo", nh)
	r.send(c, cmd, resp)
	return nil
}

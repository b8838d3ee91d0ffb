package clients

// The orderly-consumption lock table (RocketMQ's RebalanceLockManager):
// per consumer group, per message queue, the client id that may consume
// it. It lives in this stage because the stage already learns when a
// client disconnects, unregisters or expires, and a client that goes away
// must give its queues up at once.
//
// Rules (as RocketMQ's broker):
//   - a queue is granted, and its lease renewed, when nobody holds it, when
//     the requester holds it, or when the holder's lease expired
//     (LockExpiry after its last renewal, default 60 s; the Go and Java
//     clients renew every 20 s);
//   - a queue held by another client with a live lease is left out of the
//     answer (LOCK_BATCH_MQ always answers SUCCESS with the granted set);
//   - unlock removes only the requester's own entries;
//   - a client's entries go when its connection closes, when it is
//     dropped for missing heartbeats, and (for that group) when it
//     unregisters from the group.
//
// The table is in memory only: after a broker (or stage) restart clients
// re-lock within their 20 s renewal, like a restarted Java broker.

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/wheelmq/wheelmq/actors/stage"
)

// MessageQueue names one queue of a topic on a broker, as the clients write
// it in lock bodies.
type MessageQueue struct {
	Topic      string `json:"topic"`
	BrokerName string `json:"brokerName"`
	QueueID    int32  `json:"queueId"`
}

// LockBatchBody is the body of LOCK_BATCH_MQ (41) and UNLOCK_BATCH_MQ (42).
type LockBatchBody struct {
	ConsumerGroup  string         `json:"consumerGroup"`
	ClientID       string         `json:"clientId"`
	MQSet          []MessageQueue `json:"mqSet"`
	OnlyThisBroker bool           `json:"onlyThisBroker"`
}

// ParseLockBatch decodes and checks a LOCK_BATCH_MQ or UNLOCK_BATCH_MQ
// body: the group and client id must be set and every queue must name a
// topic and a non-negative queue id.
func ParseLockBatch(body []byte) (LockBatchBody, error) {
	var b LockBatchBody
	if err := json.Unmarshal(body, &b); err != nil {
		return b, fmt.Errorf("lock batch body: %w", err)
	}
	if b.ConsumerGroup == "" {
		return b, fmt.Errorf("lock batch body: consumerGroup is empty")
	}
	if b.ClientID == "" {
		return b, fmt.Errorf("lock batch body: clientId is empty")
	}
	for i, mq := range b.MQSet {
		if mq.Topic == "" || mq.QueueID < 0 {
			return b, fmt.Errorf("lock batch body: mqSet[%d] needs a topic and a queueId >= 0, got %+v", i, mq)
		}
	}
	return b, nil
}

// FormatLockBatchResponse renders the LOCK_BATCH_MQ answer
// {"lockOKMQSet":[...]} (an empty set is "[]", never null).
func FormatLockBatchResponse(mqs []MessageQueue) []byte {
	if mqs == nil {
		mqs = []MessageQueue{}
	}
	b, _ := json.Marshal(struct {
		Set []MessageQueue `json:"lockOKMQSet"`
	}{Set: mqs})
	return b
}

// LockBatch asks for the queues of Body for its client; Reply gets the
// queues granted (in request order).
type LockBatch struct {
	Body LockBatchBody
	// ConnID is the connection the request came on: the locks go when it
	// closes.
	ConnID uint64
	Reply  func(granted []MessageQueue)
	stage.FailFunc
}

// UnlockBatch releases the queues of Body held by its client.
type UnlockBatch struct {
	Body LockBatchBody
	Done func()
	stage.FailFunc
}

// ListLocks reports a group's live locks: queue -> client id.
type ListLocks struct {
	Group string
	Reply func(map[MessageQueue]string)
	stage.FailFunc
}

// lockEntry is one held queue.
type lockEntry struct {
	clientID string
	connID   uint64
	renewed  time.Time
}

// lockTable is group -> queue -> holder. Owned by the Manager's goroutine.
type lockTable map[string]map[MessageQueue]*lockEntry

func (m *Manager) expired(e *lockEntry, now time.Time) bool {
	return now.Sub(e.renewed) > m.opts.LockExpiry
}

// lock grants what it can of l and returns the granted queues.
func (m *Manager) lock(l *LockBatch) []MessageQueue {
	now := m.opts.Now()
	group := m.locks[l.Body.ConsumerGroup]
	if group == nil {
		group = map[MessageQueue]*lockEntry{}
		m.locks[l.Body.ConsumerGroup] = group
	}
	granted := make([]MessageQueue, 0, len(l.Body.MQSet))
	for _, mq := range l.Body.MQSet {
		e := group[mq]
		switch {
		case e == nil:
			group[mq] = &lockEntry{clientID: l.Body.ClientID, connID: l.ConnID, renewed: now}
		case e.clientID == l.Body.ClientID:
			e.renewed, e.connID = now, l.ConnID
		case m.expired(e, now):
			m.opts.Logger.Info().Str("group", l.Body.ConsumerGroup).Str("topic", mq.Topic).Int32("queue", mq.QueueID).
				Str("from", e.clientID).Str("to", l.Body.ClientID).Msg("expired queue lock taken over")
			group[mq] = &lockEntry{clientID: l.Body.ClientID, connID: l.ConnID, renewed: now}
		default:
			continue
		}
		granted = append(granted, mq)
	}
	return granted
}

// unlock removes the entries of u's queues that its client holds.
func (m *Manager) unlock(u *UnlockBatch) {
	group := m.locks[u.Body.ConsumerGroup]
	for _, mq := range u.Body.MQSet {
		if e := group[mq]; e != nil && e.clientID == u.Body.ClientID {
			delete(group, mq)
		}
	}
	if len(group) == 0 {
		delete(m.locks, u.Body.ConsumerGroup)
	}
}

// releaseLocks drops the entries for which drop is true, in every group
// (group == "") or in one group.
func (m *Manager) releaseLocks(group string, drop func(*lockEntry) bool) {
	for g, queues := range m.locks {
		if group != "" && g != group {
			continue
		}
		for mq, e := range queues {
			if drop(e) {
				delete(queues, mq)
			}
		}
		if len(queues) == 0 {
			delete(m.locks, g)
		}
	}
}

// releaseClient drops every lock of a client that went away.
func (m *Manager) releaseClient(id string) {
	m.releaseLocks("", func(e *lockEntry) bool { return e.clientID == id })
}

// releaseConn drops every lock taken through a closed connection.
func (m *Manager) releaseConn(connID uint64) {
	m.releaseLocks("", func(e *lockEntry) bool { return e.connID == connID })
}

// pruneLocks drops expired entries (they would be taken over anyway; this
// bounds the table).
func (m *Manager) pruneLocks() {
	now := m.opts.Now()
	m.releaseLocks("", func(e *lockEntry) bool { return m.expired(e, now) })
}

// liveLocks returns a group's unexpired locks.
func (m *Manager) liveLocks(group string) map[MessageQueue]string {
	now := m.opts.Now()
	out := map[MessageQueue]string{}
	for mq, e := range m.locks[group] {
		if !m.expired(e, now) {
			out[mq] = e.clientID
		}
	}
	return out
}

package router

// One consumption model per (group, topic) at a time: PULL (remoting push
// and pull consumers: PULL_MESSAGE 11, LITE_PULL_MESSAGE 361) or POP
// (POP_MESSAGE 200050: remoting POP consumers, the gRPC gateway).
//
// RocketMQ 5 keeps a mode per (topic, group), set by SET_MESSAGE_REQUEST_MODE
// (401, SetMessageRequestModeRequestBody, `mqadmin setConsumeMode`), which
// its QUERY_ASSIGNMENT (400) hands to clients that let the broker assign
// queues; its PullMessageProcessor and PopMessageProcessor check nothing, and
// both move the group's one consumer offset. In wheelmq the POP engine
// holds per-offset state above that offset, so a pull consumer of the same
// group would re-read (and commit past) messages that are in flight to POP
// consumers, and the engine's commits would move the pull consumer's
// offset back. So the router refuses the mix (docs/pop.md, "One model at a
// time"):
//
//   - a mode set by 401 decides: POP refuses pulls, PULL refuses pops;
//   - otherwise a pull is refused while the group has POP deliveries in
//     flight on the topic (popped, neither acked nor past their deadline),
//     and a pop is refused while a pull of the group on the topic was
//     served within its suspend time plus pullGrace (a live pull consumer
//     asks again at least that often).
//
// Refusals are NO_PERMISSION (16) with a remark naming the group, the
// topic, the model holding it and until when. The table is in memory: a
// mode set by 401 is forgotten at a restart (RocketMQ persists it).

import (
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/wheelmq/wheelmq/netloop"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/meta"
)

// Message request modes (RocketMQ MessageRequestMode).
const (
	ModePull = "PULL"
	ModePop  = "POP"
)

// pullGrace is how long after a pull's suspend time its group still
// counts as consumed by pull.
const pullGrace = 10 * time.Second

// maxTrackedInflight bounds the POP deliveries tracked per (group, topic);
// past it only the latest deadline is kept.
const maxTrackedInflight = 1 << 16

// modeKey names a (group, topic).
type modeKey struct{ group, topic string }

// queueOffset names one message of a topic.
type queueOffset struct {
	queue  int32
	offset int64
}

// modeState is what the router knows of one (group, topic).
type modeState struct {
	set       string                // the mode set by 401, "" none
	pullUntil time.Time             // a pull was served: PULL holds the group until then
	inflight  map[queueOffset]int64 // POP deliveries -> deadline (ms)
	overflow  int64                 // deadline (ms) bounding deliveries not in inflight
}

// modeTable is the router's per-(group, topic) consumption model.
type modeTable struct {
	mu sync.Mutex
	m  map[modeKey]*modeState
}

// state returns k's state, created when absent; mu is held.
func (t *modeTable) state(k modeKey) *modeState {
	if t.m == nil {
		t.m = map[modeKey]*modeState{}
	}
	s, ok := t.m[k]
	if !ok {
		s = &modeState{inflight: map[queueOffset]int64{}}
		t.m[k] = s
	}
	return s
}

// popDeadline is the latest deadline of k's live POP deliveries (0 none),
// dropping those past; mu is held.
func (s *modeState) popDeadline(nowMs int64) int64 {
	var latest int64
	for qo, d := range s.inflight {
		if d <= nowMs {
			delete(s.inflight, qo)
			continue
		}
		latest = max(latest, d)
	}
	if s.overflow > nowMs {
		latest = max(latest, s.overflow)
	}
	return latest
}

// pullAllowed decides a pull of (group, topic) suspended up to suspend; a
// pull allowed holds the group for PULL.
func (t *modeTable) pullAllowed(group, topic string, suspend time.Duration, now time.Time) *Refusal {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.state(modeKey{group, topic})
	switch s.set {
	case ModePop:
		return refuse(remoting.NoPermission, "the consumer group[%s] consumes topic[%s] by POP (set by SET_MESSAGE_REQUEST_MODE): "+
			"pulls are refused; a group is consumed by one model at a time", group, topic)
	case "":
		if d := s.popDeadline(now.UnixMilli()); d > 0 {
			return refuse(remoting.NoPermission, "the consumer group[%s] has POP deliveries of topic[%s] in flight until %s: "+
				"pulls are refused until they are acked or expire; a group is consumed by one model at a time",
				group, topic, time.UnixMilli(d).UTC().Format(time.RFC3339Nano))
		}
	}
	s.pullUntil = later(s.pullUntil, now.Add(suspend+pullGrace))
	return nil
}

// popAllowed decides a pop of (group, topic).
func (t *modeTable) popAllowed(group, topic string, now time.Time) *Refusal {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.state(modeKey{group, topic})
	switch {
	case s.set == ModePull:
		return refuse(remoting.NoPermission, "the consumer group[%s] consumes topic[%s] by PULL (set by SET_MESSAGE_REQUEST_MODE): "+
			"pops are refused; a group is consumed by one model at a time", group, topic)
	case s.set == "" && now.Before(s.pullUntil):
		return refuse(remoting.NoPermission, "the consumer group[%s] consumes topic[%s] by PULL (a pull was served; it holds the group until %s): "+
			"pops are refused; a group is consumed by one model at a time", group, topic, s.pullUntil.UTC().Format(time.RFC3339Nano))
	}
	return nil
}

// popped records the deliveries of a pop answer: msgOffsetInfo is
// "retry queue off,off;..." (ExtraInfoUtil.buildMsgOffsetInfo).
func (t *modeTable) popped(group, topic, msgOffsetInfo string, deadlineMs int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.state(modeKey{group, topic})
	for part := range strings.SplitSeq(msgOffsetInfo, ";") {
		f := strings.Fields(part)
		if len(f) != 3 {
			continue
		}
		q, err := strconv.ParseInt(f[1], 10, 32)
		if err != nil {
			continue
		}
		for o := range strings.SplitSeq(f[2], ",") {
			off, err := strconv.ParseInt(o, 10, 64)
			if err != nil {
				continue
			}
			s.track(queueOffset{int32(q), off}, deadlineMs)
		}
	}
}

// track sets one delivery's deadline; mu is held.
func (s *modeState) track(qo queueOffset, deadlineMs int64) {
	if _, ok := s.inflight[qo]; !ok && len(s.inflight) >= maxTrackedInflight {
		s.overflow = max(s.overflow, deadlineMs)
		return
	}
	s.inflight[qo] = deadlineMs
}

// changed records a delivery's new deadline (CHANGE_MESSAGE_INVISIBLETIME).
func (t *modeTable) changed(group, topic string, queue int32, offset, deadlineMs int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.state(modeKey{group, topic}).track(queueOffset{queue, offset}, deadlineMs)
}

// acked forgets deliveries acked.
func (t *modeTable) acked(group, topic string, queue int32, offsets ...int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.state(modeKey{group, topic})
	for _, off := range offsets {
		delete(s.inflight, queueOffset{queue, off})
	}
}

// setMode sets (group, topic)'s mode (401).
func (t *modeTable) setMode(group, topic, mode string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.state(modeKey{group, topic}).set = mode
}

// mode is the mode 401 set for (group, topic), "" none.
func (t *modeTable) mode(group, topic string) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s, ok := t.m[modeKey{group, topic}]; ok {
		return s.set
	}
	return ""
}

// later is the later of a and b.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// setMessageRequestModeBody is RocketMQ's SetMessageRequestModeRequestBody.
type setMessageRequestModeBody struct {
	Topic            string `json:"topic"`
	ConsumerGroup    string `json:"consumerGroup"`
	Mode             string `json:"mode"`
	PopShareQueueNum int    `json:"popShareQueueNum"`
}

// handleSetRequestMode serves SET_MESSAGE_REQUEST_MODE (401) with
// RocketMQ's checks: a retry topic NO_PERMISSION, an unknown topic
// TOPIC_NOT_EXIST, an unknown group SUBSCRIPTION_GROUP_NOT_EXIST.
func (r *Router) handleSetRequestMode(c *netloop.Conn, cmd *remoting.Command) *Refusal {
	var body setMessageRequestModeBody
	if err := json.Unmarshal(cmd.Body, &body); err != nil {
		return refuse(remoting.InvalidParameter, "body is not a SetMessageRequestModeRequestBody: %v", err)
	}
	if body.Mode == "" {
		body.Mode = ModePull // the Java body's default
	}
	if body.Mode != ModePull && body.Mode != ModePop {
		return refuse(remoting.InvalidParameter, "mode %q is neither PULL nor POP", body.Mode)
	}
	if strings.HasPrefix(body.Topic, meta.RetryGroupTopicPrefix) {
		return refuse(remoting.NoPermission, "retry topic is not allowed to set mode")
	}
	if _, ok := r.topicView.Get(body.Topic); !ok {
		return refuse(remoting.TopicNotExist, "topic[%s] not exist", body.Topic)
	}
	if _, ok := r.groupView.Get(body.ConsumerGroup); !ok {
		return refuse(remoting.SubscriptionGroupNotExist, "subscription group does not exist")
	}
	r.modes.setMode(body.ConsumerGroup, body.Topic, body.Mode)
	r.log.Info().Str("group", body.ConsumerGroup).Str("topic", body.Topic).Str("mode", body.Mode).
		Str("remote", c.RemoteAddr()).Msg("message request mode set")
	r.reply(c, cmd, remoting.Success, "")
	return nil
}

package broker

// Lite receives, acks and invisible-time changes (docs/lite.md): a
// LitePushConsumer's receive delivers the next message of each lite topic
// the client subscribes to whose group has none in flight (one in flight
// per lite topic and group, as FIFO), up to the batch; a message not acked
// within its invisible time is delivered again, first of its lite topic.

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/wheelmq/wheelmq/storage/litelog"
	"github.com/wheelmq/wheelmq/storage/message"
)

// liteHandlePrefix opens a lite receipt handle.
const liteHandlePrefix = "LITE:"

// LiteReceiveRequest is one receive of a LitePushConsumer.
type LiteReceiveRequest struct {
	// Group, Topic (the bind topic) and Client (the client id) name the
	// subscription the messages come from.
	Group, Topic, Client string
	// Max bounds the deliveries (one per lite topic).
	Max int
	// Invisible is how long a delivery stays invisible without an ack.
	Invisible time.Duration
	// Poll is how long to wait when nothing is deliverable (capped by
	// MaxPopPoll).
	Poll time.Duration
}

// LiteDelivery is one delivered lite message.
type LiteDelivery struct {
	// Record is the stored message (ReconsumeTimes = Attempt-1).
	Record message.Record
	// Lite is its lite topic.
	Lite string
	// Handle is its receipt handle (IsLiteHandle).
	Handle string
	// Attempt counts its deliveries, this one included.
	Attempt int32
	// Seq is its position in its lite topic, RocketMQ's offset in the lite
	// topic's LMQ; it counts from 0 again when the lite topic comes back
	// to memory (docs/lite.md, "Memory and files").
	Seq int64
}

// IsLiteHandle reports whether h is a lite receipt handle.
func IsLiteHandle(h string) bool { return strings.HasPrefix(h, liteHandlePrefix) }

// liteHandle is a parsed lite receipt handle:
// LITE:<token>:<seq>:<parent>:<lite> (names hold no ':').
type liteHandle struct {
	token uint64
	seq   int64
	key   liteKey
}

func (h liteHandle) String() string {
	return liteHandlePrefix + strconv.FormatUint(h.token, 10) + ":" + strconv.FormatInt(h.seq, 10) + ":" + h.key.parent + ":" + h.key.lite
}

func parseLiteHandle(s string) (liteHandle, error) {
	parts := strings.SplitN(strings.TrimPrefix(s, liteHandlePrefix), ":", 4)
	if !IsLiteHandle(s) || len(parts) != 4 {
		return liteHandle{}, fmt.Errorf("malformed lite receipt handle %q", s)
	}
	tok, err1 := strconv.ParseUint(parts[0], 10, 64)
	seq, err2 := strconv.ParseInt(parts[1], 10, 64)
	if err1 != nil || err2 != nil || parts[2] == "" || parts[3] == "" {
		return liteHandle{}, fmt.Errorf("malformed lite receipt handle %q", s)
	}
	return liteHandle{token: tok, seq: seq, key: liteKey{parts[2], parts[3]}}, nil
}

// LiteReceive waits up to r.Poll (or ctx's end) for messages of the
// client's lite topics and delivers up to r.Max, each made invisible for
// r.Invisible. An empty answer is not an error.
func (b *Broker) LiteReceive(ctx context.Context, c Caller, r *LiteReceiveRequest) ([]LiteDelivery, *Error) {
	if err := b.authorize(c, consumeNeeds(r.Group, r.Topic)...); err != nil {
		return nil, err
	}
	if _, err := b.ConsumeAllowed(r.Group); err != nil {
		return nil, err
	}
	end := time.Now().Add(min(r.Poll, MaxPopPoll))
	for {
		picked, kick, err := b.litePick(r, time.Now())
		if err != nil {
			return nil, err
		}
		if len(picked) > 0 {
			return b.liteRead(r.Group, picked), nil
		}
		wait := time.Until(end)
		if wait <= 0 {
			return nil, nil
		}
		// Recheck at least every second: an invisible time may run out.
		t := time.NewTimer(min(wait, time.Second))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, nil
		case <-kick:
		case <-t.C:
		}
		t.Stop()
	}
}

// litePicked is one delivery chosen under the lock, read after.
type litePicked struct {
	h       liteHandle
	off     int64
	attempt int32
}

// litePick chooses up to r.Max deliveries and marks them in flight; kick
// is the client's wake-up channel.
func (b *Broker) litePick(r *LiteReceiveRequest, now time.Time) ([]litePicked, <-chan struct{}, *Error) {
	s := &b.lite
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.open {
		return nil, nil, Errorf(Unavailable, "lite topics are not served")
	}
	b.litePromotedLocked() // a promoted replica indexes what it holds first (litepromote.go)
	cl := s.clients[liteClientKey{r.Group, r.Client}]
	if cl == nil || cl.parent != r.Topic {
		// Not subscribed yet (the SDK syncs right after it starts): wait.
		cl = &liteClient{parent: r.Topic, topics: map[string]struct{}{}, kick: make(chan struct{}, 1)}
		s.clients[liteClientKey{r.Group, r.Client}] = cl
	}
	ms := now.UnixMilli()
	var out []litePicked
	for l := range cl.topics {
		if len(out) >= r.Max {
			break
		}
		q := s.queues[liteKey{cl.parent, l}]
		if q == nil {
			continue
		}
		g := q.group(r.Group)
		f := &g.flight
		var seq int64
		attempt := int32(1)
		switch {
		case f.token != 0 && f.deadline > ms:
			continue // one in flight per lite topic
		case f.token != 0:
			seq, attempt = f.seq, f.attempt+1 // its invisible time ran out: again
			if f.attempt < 0 {
				attempt = -f.attempt // suspended (LiteChangeInvisible): the same attempt
			}
		case g.acked < q.base:
			g.acked = q.base
			fallthrough
		default:
			if g.acked >= q.end() {
				continue
			}
			seq = g.acked
			s.flights++
		}
		s.tokens++
		*f = liteFlight{token: s.tokens, seq: seq, deadline: ms + r.Invisible.Milliseconds(), attempt: attempt}
		out = append(out, litePicked{h: liteHandle{token: f.token, seq: seq, key: q.key}, off: q.msgs[seq-q.base], attempt: attempt})
	}
	return out, cl.kick, nil
}

// liteRead reads the picked records (off the lock). A record that cannot
// be read is logged and left in flight: it comes again after its
// invisible time.
func (b *Broker) liteRead(group string, picked []litePicked) []LiteDelivery {
	cl := b.p.Store().CommitLog
	out := make([]LiteDelivery, 0, len(picked))
	for _, p := range picked {
		raw, _, err := cl.Read(p.off)
		if err == nil {
			var rec message.Record
			if rec, _, err = message.Decode(raw); err == nil {
				rec.ReconsumeTimes = p.attempt - 1
				out = append(out, LiteDelivery{Record: rec, Lite: p.h.key.lite, Handle: p.h.String(), Attempt: p.attempt, Seq: p.h.seq})
				continue
			}
		}
		b.log.Error().Err(err).Str("group", group).Str("topic", p.h.key.parent).Str("liteTopic", p.h.key.lite).
			Int64("offset", p.off).Msg("lite message unreadable")
	}
	return out
}

// flightOf finds h's flight. mu held.
func (s *liteState) flightOf(group string, h liteHandle) (*liteQueue, *liteGroup, *Error) {
	q := s.queues[h.key]
	if q == nil {
		return nil, nil, Errorf(NotFound, "lite topic %s of %s is gone (expired)", h.key.lite, h.key.parent)
	}
	for i := range q.groups {
		g := &q.groups[i]
		if g.name == group {
			if g.flight.token != h.token {
				return nil, nil, Errorf(NotFound, "the receipt handle is stale: the message was acked or delivered again")
			}
			return q, g, nil
		}
	}
	return nil, nil, Errorf(NotFound, "group %s has nothing in flight in lite topic %s", group, h.key.lite)
}

// LiteAck acknowledges a lite delivery: its lite topic's next message
// becomes deliverable.
func (b *Broker) LiteAck(c Caller, group, handle string) *Error {
	h, perr := parseLiteHandle(handle)
	if perr != nil {
		return &Error{Status: BadRequest, Remark: perr.Error(), Err: perr}
	}
	if err := b.authorize(c, consumeNeeds(group, h.key.parent)...); err != nil {
		return err
	}
	s := &b.lite
	s.mu.Lock()
	defer s.mu.Unlock()
	q, g, err := s.flightOf(group, h)
	if err != nil {
		return err
	}
	off := q.msgs[g.flight.seq-q.base]
	g.acked = g.flight.seq + 1
	g.flight = liteFlight{}
	s.flights--
	s.recordLocked(litelog.Record{Kind: litelog.KindAck, Offset: off, Ms: nowMs(), Parent: h.key.parent, Lite: h.key.lite, Group: group})
	q.trim()
	if len(q.msgs) == 0 && len(s.subs[q.key]) == 0 {
		s.dropLocked(q) // nothing left: out of memory until its next message
		return nil
	}
	s.wakeLocked(q.key)
	return nil
}

// LiteChangeInvisible sets a lite delivery's invisible time from now and
// returns its new handle (the old one is stale). With suspend (the v5
// protocol's ChangeInvisibleDurationRequest.suspend, which lite consumers
// set) its next delivery keeps the attempt instead of counting one more.
func (b *Broker) LiteChangeInvisible(c Caller, group, handle string, d time.Duration, suspend bool) (string, *Error) {
	h, perr := parseLiteHandle(handle)
	if perr != nil {
		return "", &Error{Status: BadRequest, Remark: perr.Error(), Err: perr}
	}
	if err := b.authorize(c, consumeNeeds(group, h.key.parent)...); err != nil {
		return "", err
	}
	s := &b.lite
	s.mu.Lock()
	defer s.mu.Unlock()
	q, g, err := s.flightOf(group, h)
	if err != nil {
		return "", err
	}
	s.tokens++
	g.flight.token = s.tokens
	g.flight.deadline = nowMs() + d.Milliseconds()
	// Negative: suspended, its redelivery keeps the attempt (litePick); the
	// last change decides.
	if (suspend && g.flight.attempt > 0) || (!suspend && g.flight.attempt < 0) {
		g.flight.attempt = -g.flight.attempt
	}
	if d <= 0 {
		s.wakeLocked(q.key)
	}
	return liteHandle{token: g.flight.token, seq: g.flight.seq, key: q.key}.String(), nil
}

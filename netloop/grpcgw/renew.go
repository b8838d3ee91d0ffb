package grpcgw

// Auto-renew: push consumers receive with auto_renew and no invisible
// duration; the gateway holds each handle and renews it before it expires
// (the Apache proxy's DefaultReceiptHandleManager), and the client acks or
// nacks with the handle it was given, mapped here to the current one. A
// handle held for renewMaxHeld is given up as the proxy does: the message
// comes back after the group's retry policy's delay for its delivery
// attempt (a consumer that never answers is treated as a failed attempt).

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/wheelmq/wheelmq/actors/broker"
	"github.com/wheelmq/wheelmq/storage/meta"
)

// Renewal policy.
const (
	renewAhead   = 10 * time.Second // renew this long before expiry
	renewMaxHeld = 3 * time.Hour    // give a handle up after this long
	renewTick    = time.Second
	releaseAfter = time.Second // invisibility left to held handles at the end
	maxHeld      = 65536       // per session
)

// renewSteps are the successive invisible durations of renewals.
var renewSteps = []time.Duration{time.Minute, 3 * time.Minute, 5 * time.Minute, 10 * time.Minute, 30 * time.Minute, time.Hour}

// renewer holds one session's auto-renewed handles; its goroutine runs
// while it holds any and stops on release.
type renewer struct {
	s       *session
	mu      sync.Mutex
	held    map[string]*heldHandle // by the handle the client was given
	running bool
	ended   bool
	stop    chan struct{}
	done    chan struct{}
	// change sets a held handle's invisibility (changeTo; a test's
	// recorder) and policy is its group's retry policy (the broker's group
	// table).
	change func(h heldHandle, d time.Duration) (string, error)
	policy func(h heldHandle) meta.RetryPolicy
}

// heldHandle is one auto-renewed delivery.
type heldHandle struct {
	cur          string // the handle the broker knows now (client form)
	group, topic string
	msgID        string
	attempt      int32         // the delivery attempt (1 for the first)
	caller       broker.Caller // who received it (the renewals are made as it)
	expires      time.Time
	since        time.Time
	step         int
}

func newRenewer(s *session) *renewer {
	r := &renewer{s: s, held: map[string]*heldHandle{}, stop: make(chan struct{}), done: make(chan struct{})}
	r.change, r.policy = r.changeTo, r.groupPolicy
	return r
}

// groupPolicy is the retry policy of h's group (RocketMQ's default when
// the broker does not know the group).
func (r *renewer) groupPolicy(h heldHandle) meta.RetryPolicy {
	if r.s.g.opts.Broker == nil {
		return meta.SubscriptionGroupConfig{}.RetryPolicy()
	}
	gc, _ := r.s.g.opts.Broker.Group(h.caller, h.group)
	return gc.RetryPolicy()
}

// hold starts renewing handle h, invisible until expires.
func (r *renewer) hold(h, group, topic, msgID string, attempt int32, c broker.Caller, expires time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ended || len(r.held) >= maxHeld {
		return
	}
	r.held[h] = &heldHandle{cur: h, group: group, topic: topic, msgID: msgID, attempt: attempt, caller: c, expires: expires, since: time.Now()}
	if !r.running {
		r.running = true
		r.s.g.goOwned("renewer", r.loop) // a panic ends it: the handles it held are redelivered
	}
}

// take returns the current handle for the client's h and stops renewing
// it (the client acks or changes it now); h itself when not held.
func (r *renewer) take(h string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e, ok := r.held[h]; ok {
		delete(r.held, h)
		return e.cur
	}
	return h
}

// loop renews what is about to expire, every renewTick, until release.
func (r *renewer) loop() {
	defer close(r.done)
	t := time.NewTicker(renewTick)
	defer t.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-r.s.g.stop:
			return
		case now := <-t.C:
			r.renewDue(now)
		}
	}
}

// renewDue renews every held handle within renewAhead of its expiry, and
// gives up those held for renewMaxHeld (back after the group's retry
// delay for their attempt).
func (r *renewer) renewDue(now time.Time) {
	type due struct {
		key    string
		h      heldHandle
		giveUp bool
	}
	var list []due
	r.mu.Lock()
	for k, e := range r.held {
		switch {
		case !e.expires.After(now):
			delete(r.held, k) // already expired: the broker redelivers it
		case now.Sub(e.since) > renewMaxHeld:
			delete(r.held, k)
			list = append(list, due{k, *e, true})
		case e.expires.Sub(now) <= renewAhead:
			list = append(list, due{k, *e, false})
		}
	}
	r.mu.Unlock()
	for _, d := range list {
		if d.giveUp {
			delay := r.policy(d.h).AttemptDelay(d.h.attempt, rand.Float64())
			if _, err := r.change(d.h, delay); err != nil {
				r.s.g.log.Debug().Str("client_id", r.s.id).Str("msg_id", d.h.msgID).Err(err).Msg("auto-renew: giving a handle up failed: the message comes back when its invisible time ends")
			}
			continue
		}
		step := renewSteps[min(d.h.step, len(renewSteps)-1)]
		nh, st := r.change(d.h, step)
		r.mu.Lock()
		if e, ok := r.held[d.key]; ok && e.cur == d.h.cur {
			if st != nil {
				delete(r.held, d.key)
			} else {
				e.cur, e.expires, e.step = nh, now.Add(step), e.step+1
			}
		}
		r.mu.Unlock()
		if st != nil {
			r.s.g.log.Debug().Str("client_id", r.s.id).Str("msg_id", d.h.msgID).Err(st).Msg("auto-renew failed: the message will be redelivered")
		}
	}
}

// changeTo sets h's invisibility to d through the broker API and returns
// the new client handle.
func (r *renewer) changeTo(h heldHandle, d time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), r.s.g.opts.RequestTimeout)
	defer cancel()
	rc, st := handleStatus(h.cur)
	if st != nil {
		return "", statusError{st.GetMessage()}
	}
	nh, st := r.s.g.change(ctx, h.caller, h.group, h.topic, rc, d)
	if st != nil {
		return "", statusError{st.GetMessage()}
	}
	return nh, nil
}

// statusError carries a failed status's message as an error.
type statusError struct{ msg string }

func (e statusError) Error() string { return e.msg }

// release stops renewing and makes every held handle visible again about
// a second from now (the client is gone), within ctx.
func (r *renewer) release(ctx context.Context) {
	r.mu.Lock()
	r.ended = true
	held := r.held
	r.held = map[string]*heldHandle{}
	running := r.running
	r.mu.Unlock()
	if running {
		close(r.stop)
		<-r.done
	}
	for _, h := range held {
		if ctx.Err() != nil {
			return
		}
		if _, err := r.change(*h, releaseAfter); err != nil {
			r.s.g.log.Debug().Err(err).Str("client_id", r.s.id).Str("msg_id", h.msgID).Msg("releasing an auto-renewed handle failed")
		}
	}
}

package stage

import (
	"errors"
	"sync"
	"sync/atomic"
)

// Inbox is a batched mailbox in front of a stage's actor, for one message
// type. Senders Push from any goroutine without going through the actor
// system; the Push that finds the inbox idle sends the stage one kick
// message, and the actor, handling the kick, Takes everything queued so far
// in one go, and again until the inbox is empty. The protoactor mailbox then
// carries one message per batch instead of one per request (each costing a
// mailbox slot, an envelope and often a goroutine hand-off), while the actor
// stays the only consumer, under its supervisor.
//
// The stage's instruments cover the inbox: queued items count in
// wheelmq_actor_mailbox_depth, taken ones in wheelmq_actor_messages_total
// (the kicks count there too, as the messages they are).
//
// Failures: a stage stopped for good fails what its inbox holds and every
// later Push, with its *DownError (T is Failable); an actor instance must
// call Rekick when it starts, so that a restart after a panic takes what was
// queued while it was down (the kick of that batch may have been the
// message that failed).
type Inbox[T Failable] struct {
	kick  any // Prewrapped
	stage atomic.Pointer[Stage]

	mu     sync.Mutex
	items  []T  // guarded by mu
	kicked bool // a kick is on its way or the actor is draining; guarded by mu
}

// ErrUnbound fails a Push to an inbox whose stage was never spawned.
var ErrUnbound = errors.New("stage inbox: no stage bound")

// NewInbox returns an inbox whose kick message is kick (what the actor's
// Receive takes as "drain your inbox"). Bind it to the stage from the
// actor's Producer.
func NewInbox[T Failable](kick any) *Inbox[T] {
	return &Inbox[T]{kick: Prewrapped(kick)}
}

// Bind attaches the inbox to its stage (call it from the stage's Producer,
// with the self it is given; later calls do nothing).
func (in *Inbox[T]) Bind(s *Stage) {
	if !in.stage.CompareAndSwap(nil, s) {
		return
	}
	s.inboxMu.Lock()
	s.inboxes = append(s.inboxes, in)
	s.inboxMu.Unlock()
}

// Push queues m for the actor; safe from any goroutine, never blocks. On a
// stage that is down, or before Bind, m is failed at once.
func (in *Inbox[T]) Push(m T) { in.PushKicked(m) }

// PushKicked is Push that reports whether it woke the actor (the inbox was
// idle).
func (in *Inbox[T]) PushKicked(m T) bool {
	s := in.stage.Load()
	if s == nil {
		m.Fail(ErrUnbound)
		return false
	}
	in.mu.Lock()
	if d := s.down.Load(); d != nil {
		in.mu.Unlock()
		m.Fail(d)
		return false
	}
	in.items = append(in.items, m)
	kick := !in.kicked
	in.kicked = true
	in.mu.Unlock()
	s.pending.Add(1)
	if kick {
		s.Send(in.kick)
	}
	return kick
}

// Take appends everything queued to dst and returns it. It is for the actor
// only. A Take that finds the inbox empty ends the batch: the next Push
// kicks the actor again.
func (in *Inbox[T]) Take(dst []T) []T {
	in.mu.Lock()
	n := len(in.items)
	if n == 0 {
		in.kicked = false
		in.mu.Unlock()
		return dst
	}
	dst = append(dst, in.items...)
	clear(in.items)
	in.items = in.items[:0]
	in.mu.Unlock()
	if s := in.stage.Load(); s != nil {
		s.pending.Add(-int64(n))
		s.inst.messages.Add(uint64(n))
	}
	return dst
}

// Rekick makes the actor drain again if anything is queued; call it when an
// actor instance starts.
func (in *Inbox[T]) Rekick() {
	s := in.stage.Load()
	if s == nil {
		return
	}
	in.mu.Lock()
	kick := len(in.items) > 0
	in.kicked = kick
	in.mu.Unlock()
	if kick {
		s.Send(in.kick)
	}
}

// Len is the number of queued items.
func (in *Inbox[T]) Len() int {
	in.mu.Lock()
	defer in.mu.Unlock()
	return len(in.items)
}

// failAll fails everything queued with err (the stage is down).
func (in *Inbox[T]) failAll(err error) {
	in.mu.Lock()
	items := in.items
	in.items, in.kicked = nil, false
	in.mu.Unlock()
	if s := in.stage.Load(); s != nil && len(items) > 0 {
		s.pending.Add(-int64(len(items)))
	}
	for _, m := range items {
		m.Fail(err)
	}
}

// inboxFailer is an Inbox of any type, for the tombstone.
type inboxFailer interface{ failAll(err error) }

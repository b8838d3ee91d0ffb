package producer

import "time"

// Mode is how a message is sent.
type Mode int

// Send modes.
const (
	// ModeSync waits for the broker's answer (Send, SendBatch).
	ModeSync Mode = iota
	// ModeAsync answers through a callback (SendAsync).
	ModeAsync
	// ModeOneway expects no answer (SendOneway).
	ModeOneway
)

// String names the mode.
func (m Mode) String() string {
	switch m {
	case ModeSync:
		return "sync"
	case ModeAsync:
		return "async"
	case ModeOneway:
		return "oneway"
	}
	return "unknown"
}

// SendInfo describes one send attempt to a hook.
type SendInfo struct {
	// Group is the producer group.
	Group string
	// Mode is the send mode.
	Mode Mode
	// Messages are the messages sent (one, or a batch). Hooks must not
	// change them.
	Messages []*Message
	// Attempt counts the attempts of this send, from 1.
	Attempt int
	// Queue is the queue chosen for the attempt.
	Queue Queue
	// Addr is the broker address.
	Addr string
	// Result is the attempt's result (After only; nil on error and for
	// oneway sends).
	Result *SendResult
	// Err is the attempt's error (After only).
	Err error
	// Latency is the time from Before to the answer (After only).
	Latency time.Duration
}

// Hook observes send attempts. Before runs when an attempt has chosen its
// queue, just before the request is written; After runs once for every
// Before, with the result or the error (a refused, failed or timed-out
// attempt included). Either may be nil. Hooks run on the sending goroutine
// (sync, oneway, the first attempt of an async send) or on a callback
// worker, never on a connection's reader; they must be safe for concurrent
// use and should be quick.
type Hook struct {
	Before func(*SendInfo)
	After  func(*SendInfo)
}

package pull

// Outcome is how a pull was answered.
type Outcome uint8

// The outcomes. The codec maps them to its wire codes (remoting:
// SUCCESS, PULL_NOT_FOUND, PULL_OFFSET_MOVED, PULL_RETRY_IMMEDIATELY,
// SYSTEM_BUSY, SYSTEM_ERROR).
const (
	// Found: messages, in Body.
	Found Outcome = iota
	// NoNewMessage: nothing at the offset yet (a long poll parks on it).
	NoNewMessage
	// OffsetMoved: the offset is outside the queue (or an admin reset
	// moved it); Next is where to pull from.
	OffsetMoved
	// RetryImmediately: every message read was filtered out; Next goes
	// on from past them.
	RetryImmediately
	// Busy: the client's connection cannot take more answers (it does
	// not read what it was sent); nothing was read.
	Busy
	// Failed: the read failed; Remark says why.
	Failed
)

// Result is a pull's answer.
type Result struct {
	Outcome Outcome
	// Remark is RocketMQ's status name for the outcome (FOUND,
	// NO_MESSAGE_IN_QUEUE, OFFSET_TOO_SMALL, OFFSET_OVERFLOW_ONE,
	// OFFSET_OVERFLOW_BADLY, NO_MATCHED_MESSAGE, OFFSET_RESET), or why it
	// was Busy or Failed.
	Remark string
	// Next is the offset the next pull starts from; Min and Max are the
	// queue's bounds (all 0 for Busy and Failed, and for a queue with no
	// message).
	Next, Min, Max int64
	// Body is the records taken, back to back as stored; Messages counts
	// them.
	Body     []byte
	Messages int
}

// HasOffsets reports whether the answer carries Next, Min and Max (every
// outcome but Busy and Failed).
func (r Result) HasOffsets() bool { return r.Outcome != Busy && r.Outcome != Failed }

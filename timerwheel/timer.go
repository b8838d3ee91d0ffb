package timerwheel

import (
	"fmt"
	"hash/fnv"

	"github.com/wheelmq/wheelmq/timerwheel/timerlog"
)

// Kind says what a Timer does.
type Kind uint8

const (
	// KindNormal is a timer message to deliver at DeliverMs.
	KindNormal Kind = Kind(timerlog.KindNormal)
	// KindCancel suppresses the normal timers with the same KeyHash whose
	// DeliverMs lies within CancelWindow of the cancel's DeliverMs
	// (RocketMQ's TIMER_DEL_UNIQKEY), whatever slot they are in.
	KindCancel Kind = Kind(timerlog.KindCancel)
)

// String names the kind.
func (k Kind) String() string { return timerlog.Kind(k).String() }

// MaxDeliverMs is the largest accepted DeliverMs (9999-12-31T23:59:59.999Z).
const MaxDeliverMs = 253402300799999

// Timer is one timer message as the enqueue side hands it to Add and the
// dequeue side receives it from Due.
type Timer struct {
	// DeliverMs is the delivery time in epoch milliseconds: the timer is
	// never returned by Due(now) with now < DeliverMs.
	DeliverMs int64
	// CommitLogOffset is the CommitLog offset of the rmq_sys_wheel_timer
	// message (>= 0 for normal timers; -1 allowed for a cancel that has no
	// message, such as an admin cancel). It identifies the timer message
	// across relinks and replays.
	CommitLogOffset int64
	// Size is the CommitLog record size of the message.
	Size int32
	// Kind is KindNormal or KindCancel.
	Kind Kind
	// KeyHash is KeyHash(realTopic, uniqKey) (HashKey of the
	// TIMER_DEL_UNIQKEY value for a cancel). 0 means not cancellable; a
	// cancel needs a non-zero hash.
	KeyHash uint64
	// QueueOffset is the message's offset in the rmq_sys_wheel_timer
	// consume queue, or -1 when it did not come from there. Offsets must
	// increase across Add calls; Add skips a timer whose offset is not above
	// every offset added before (a replay of the enqueue side).
	QueueOffset int64

	// Seq, EffMs and AddedMs are set by the store and ignored by Add.

	// Seq is the TimerLog sequence of the record that released this timer.
	Seq uint64
	// EffMs is the effective due time: DeliverMs, or the dequeue position
	// when the timer arrived already due. (EffMs, Seq) is the timer's
	// position in the dequeue order; see Cursor.
	EffMs int64
	// AddedMs is the nowMs of the Add that stored the timer
	// (TIMER_ENQUEUE_MS).
	AddedMs int64
}

// Cursor returns the timer's position in the dequeue order.
func (t Timer) Cursor() Cursor { return Cursor{Ms: t.EffMs, Seq: t.Seq} }

// Validate reports whether Add accepts t; errors wrap ErrInvalidTimer.
func (t Timer) Validate() error {
	switch {
	case t.Kind != KindNormal && t.Kind != KindCancel:
		return fmt.Errorf("kind %d: %w", t.Kind, ErrInvalidTimer)
	case t.DeliverMs < 0 || t.DeliverMs > MaxDeliverMs:
		return fmt.Errorf("deliverMs %d outside [0, %d]: %w", t.DeliverMs, int64(MaxDeliverMs), ErrInvalidTimer)
	case t.Size < 0:
		return fmt.Errorf("size %d: %w", t.Size, ErrInvalidTimer)
	case t.Kind == KindNormal && t.CommitLogOffset < 0:
		return fmt.Errorf("normal timer with commitLogOffset %d: %w", t.CommitLogOffset, ErrInvalidTimer)
	case t.CommitLogOffset < -1:
		return fmt.Errorf("commitLogOffset %d: %w", t.CommitLogOffset, ErrInvalidTimer)
	case t.Kind == KindCancel && t.KeyHash == 0:
		return fmt.Errorf("cancel without key hash: %w", ErrInvalidTimer)
	case t.QueueOffset < -1:
		return fmt.Errorf("queueOffset %d: %w", t.QueueOffset, ErrInvalidTimer)
	}
	return nil
}

// HashKey hashes a cancel key exactly as written in TIMER_DEL_UNIQKEY,
// "<realTopic>+<uniqKey>", with FNV-1a 64. It never returns 0.
func HashKey(key string) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(key))
	if v := h.Sum64(); v != 0 {
		return v
	}
	return 1
}

// KeyHash is HashKey(realTopic + "+" + uniqKey).
func KeyHash(realTopic, uniqKey string) uint64 {
	return HashKey(realTopic + "+" + uniqKey)
}

// KeyHashBytes is KeyHash of byte slices, without allocating.
func KeyHashBytes(realTopic, uniqKey []byte) uint64 {
	const offset64, prime64 = 14695981039346656037, 1099511628211
	h := uint64(offset64)
	for _, part := range [3][]byte{realTopic, {'+'}, uniqKey} {
		for _, c := range part {
			h ^= uint64(c)
			h *= prime64
		}
	}
	if h != 0 {
		return h
	}
	return 1
}

// Cursor is a position in the dequeue order: timers are released by
// increasing (Ms, Seq), where Ms is a timer's EffMs and Seq its TimerLog
// sequence. A cursor c covers every timer whose position is <= c.
type Cursor struct {
	// Ms is an effective time (EffMs) in epoch ms.
	Ms int64
	// Seq is a TimerLog sequence.
	Seq uint64
}

// Less orders cursors.
func (c Cursor) Less(o Cursor) bool {
	return c.Ms < o.Ms || c.Ms == o.Ms && c.Seq < o.Seq
}

// String formats the cursor as ms/seq.
func (c Cursor) String() string { return fmt.Sprintf("%d/%d", c.Ms, c.Seq) }

// Batch is what Due returns: the timers released between From (exclusive)
// and To (inclusive). Pass it to Ack, in order, once the timers are
// delivered, even when it is empty.
type Batch struct {
	// Timers are due normal timers in dequeue order (by EffMs, then Seq).
	Timers []Timer
	// Cancelled are normal timers suppressed by a cancel; they are not to
	// be delivered (for metrics and logs).
	Cancelled []Timer
	// From and To delimit the batch in the dequeue order.
	From, To Cursor
}

// Len is the number of timers released (delivered plus cancelled).
func (b Batch) Len() int { return len(b.Timers) + len(b.Cancelled) }

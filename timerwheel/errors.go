package timerwheel

import "errors"

// Sentinel errors of the timer store. Returned errors wrap them with context;
// test with errors.Is. Errors of the TimerLog (timerlog.ErrCorrupt, ...) and
// of the state files (checkpoint.ErrCorrupt) are wrapped as they are.
var (
	// ErrClosed is returned by every method after Close.
	ErrClosed = errors.New("timerwheel: store closed")
	// ErrOptions reports invalid Options (all problems are joined).
	ErrOptions = errors.New("timerwheel: invalid options")
	// ErrIncompatible is returned by Open when the store on disk was created
	// with a different wheel geometry (SlotMs, NearSlots, FarSlotMs, far
	// span or CancelWindow).
	ErrIncompatible = errors.New("timerwheel: store geometry differs from options")
	// ErrInvalidTimer is returned by Add (nothing is written) and by
	// Timer.Validate for a timer the store cannot hold.
	ErrInvalidTimer = errors.New("timerwheel: invalid timer")
	// ErrAckOrder is returned by Ack for a batch that does not start at the
	// acknowledged position or ends beyond what Due issued.
	ErrAckOrder = errors.New("timerwheel: ack out of order")
	// ErrFailed is returned after a write, sync or internal consistency
	// error: the store refuses further work until it is reopened, which
	// recovers from the files.
	ErrFailed = errors.New("timerwheel: store failed")
)

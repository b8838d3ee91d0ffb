package timerwheel

import (
	"errors"
	"fmt"
	"time"

	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/storage/corruption"
	"github.com/wheelmq/wheelmq/storage/vfs"
	"github.com/wheelmq/wheelmq/timerwheel/checkpoint"
	"github.com/wheelmq/wheelmq/timerwheel/timerlog"
)

// Defaults for Options.
const (
	DefaultSlotMs        = 10
	DefaultNearSlots     = 1 << 17 // 1310.72 s of 10 ms slots
	DefaultFarSlotMs     = 600_000 // 10 min buckets
	DefaultMaxDelay      = 365 * 24 * time.Hour
	DefaultCancelWindow  = time.Second
	DefaultSnapshotEvery = 1 << 20
	DefaultRelinkChunk   = 1 << 13
	DefaultAddChunk      = 1 << 13
	DefaultCompactBudget = 1 << 14
	// DefaultDueMax is used by Due when max <= 0.
	DefaultDueMax = 4096
	// DefaultLoadAheadMs and DefaultLoadMax bound how far ahead Due loads
	// near slots together (see Options.LoadAheadMs).
	DefaultLoadAheadMs = 100
	DefaultLoadMax     = 1 << 16
)

// appendCacheMs: the TimerLog keeps what it writes in its block cache when
// a record of the block is due within this long of being added (timerlog
// Options.CacheDueWithinMs). Copies written by relinks and compaction keep
// their timer's AddedMs, so they do not qualify once the timer is older
// than this. A variable for tests.
var appendCacheMs int64 = 60_000

// Options configure a Store. Zero fields take the defaults above.
type Options struct {
	// Dir holds the store: timerlog/, checkpoint and wheel.snap.
	Dir string
	// FS is the file system every file of the store is read and written
	// through (nil: vfs.OS{}); tests inject faults or crashes with it.
	FS vfs.FS
	// SlotMs is the width of a near-wheel slot in ms. It is not the
	// delivery precision (timers are released at their exact ms); it is
	// the granularity of NextDue and of the slot array.
	SlotMs int64
	// NearSlots is the number of near-wheel slots. NearSlots*SlotMs must
	// cover two far buckets plus twice the cancel window with room to
	// spare: that room is how far dequeue may run ahead of the last
	// checkpointed acknowledgement.
	NearSlots int
	// FarSlotMs is the width of a far-wheel bucket (a multiple of SlotMs).
	// A bucket's records are relinked into the near wheel one bucket
	// before it starts.
	FarSlotMs int64
	// MaxDelay sizes the far wheel. Longer delays still work: the record
	// is parked in the last bucket and moved on when that bucket relinks.
	// The broker's send path enforces the accepted maximum.
	MaxDelay time.Duration
	// CancelWindow is how far apart the DeliverMs of a cancel and of its
	// target may be (RocketMQ needs them equal after rounding; clients
	// that round differently land in neighbouring slots).
	CancelWindow time.Duration
	// SegmentSize is the TimerLog segment size (timerlog.DefaultSegmentSize).
	SegmentSize int
	// SnapshotEvery is the number of TimerLog records after which Flush
	// writes a new wheel snapshot; it bounds the replay on recovery.
	SnapshotEvery int
	// RelinkChunk is the number of records relinked per atomic group, and
	// the most a Due call relinks ahead of need (bounding how long it holds
	// the store lock for a large far bucket).
	RelinkChunk int
	// AddChunk is the number of records Add writes per TimerLog batch.
	AddChunk int
	// CompactBudget is the number of records Flush may move per call to
	// let old TimerLog segments go.
	CompactBudget int
	// LoadAheadMs and LoadMax: when Due loads a due near slot, it loads
	// with it the next slots that start within LoadAheadMs of now (and
	// every slot already due) as long as the ready heap stays within
	// LoadMax records, and walks their chains together in one pass down
	// the TimerLog. Timers due together but added at different times
	// (a burst sent in random order) have chains that interleave across
	// the log: one pass reads each TimerLog block once instead of once per
	// slot. Loading early never releases early: Due releases by each
	// record's own millisecond.
	LoadAheadMs int64
	LoadMax     int
	// NoSync makes Flush skip every fsync (it still orders and writes the
	// files). A process crash loses nothing either way; an OS crash or
	// power loss may then lose what was not written back. For tests and
	// benchmarks.
	NoSync bool
	// Logger receives structured events; the zero value discards them.
	Logger zerolog.Logger
	// OnCorruption says what the store does with a TimerLog record that
	// fails its checks: skip it (the default: the slot's chain goes on at
	// the previous record of the same slot, found by scanning the log) or
	// stop (the store fails with an error wrapping corruption.ErrStop).
	OnCorruption corruption.Policy
	// Corruption counts the damaged TimerLog bytes met
	// (wheelmq_store_corrupt_bytes_total{file="timerlog"}); nil: counted
	// but not exported. Share the storage.Options.Corruption instance.
	Corruption *corruption.Metrics
}

// withDefaults returns o with zero fields set to their defaults.
func (o Options) withDefaults() Options {
	if o.SlotMs == 0 {
		o.SlotMs = DefaultSlotMs
	}
	if o.NearSlots == 0 {
		o.NearSlots = DefaultNearSlots
	}
	if o.FarSlotMs == 0 {
		o.FarSlotMs = DefaultFarSlotMs
	}
	if o.MaxDelay == 0 {
		o.MaxDelay = DefaultMaxDelay
	}
	if o.CancelWindow == 0 {
		o.CancelWindow = DefaultCancelWindow
	}
	o.FS = vfs.Default(o.FS)
	if o.SegmentSize == 0 {
		o.SegmentSize = timerlog.DefaultSegmentSize
	}
	if o.SnapshotEvery == 0 {
		o.SnapshotEvery = DefaultSnapshotEvery
	}
	if o.RelinkChunk == 0 {
		o.RelinkChunk = DefaultRelinkChunk
	}
	if o.AddChunk == 0 {
		o.AddChunk = DefaultAddChunk
	}
	if o.CompactBudget == 0 {
		o.CompactBudget = DefaultCompactBudget
	}
	if o.LoadAheadMs == 0 {
		o.LoadAheadMs = DefaultLoadAheadMs
	}
	if o.LoadMax == 0 {
		o.LoadMax = DefaultLoadMax
	}
	return o
}

// Validate reports every problem with o (after defaults) at once; the
// error wraps ErrOptions.
func (o Options) Validate() error {
	o = o.withDefaults()
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if o.Dir == "" {
		bad("Dir is empty")
	}
	if o.SlotMs < 1 || o.SlotMs > 60_000 {
		bad("SlotMs %d outside [1, 60000]", o.SlotMs)
	}
	if o.NearSlots < 16 || o.NearSlots > 1<<24 {
		bad("NearSlots %d outside [16, %d]", o.NearSlots, 1<<24)
	}
	if o.FarSlotMs < o.SlotMs || o.SlotMs > 0 && o.FarSlotMs%o.SlotMs != 0 {
		bad("FarSlotMs %d is not a positive multiple of SlotMs %d", o.FarSlotMs, o.SlotMs)
	}
	if o.MaxDelay < 0 || o.CancelWindow < 0 {
		bad("MaxDelay %v and CancelWindow %v must not be negative", o.MaxDelay, o.CancelWindow)
	}
	if o.FarSlotMs > 0 {
		if n := o.farSlots(); n > 1<<22 {
			bad("MaxDelay %v / FarSlotMs %d needs %d far buckets (max %d)", o.MaxDelay, o.FarSlotMs, n, 1<<22)
		}
	}
	if need := o.minNearSpan(); int64(o.NearSlots)*o.SlotMs < need {
		bad("NearSlots*SlotMs = %d ms is below 2*FarSlotMs + 2*CancelWindow + 2*SlotMs = %d ms",
			int64(o.NearSlots)*o.SlotMs, need)
	}
	if o.SegmentSize < 4*timerlog.EntrySize || o.SnapshotEvery < 1 || o.RelinkChunk < 1 ||
		o.AddChunk < 1 || o.CompactBudget < 0 || o.LoadAheadMs < 0 || o.LoadMax < 0 {
		bad("SegmentSize %d, SnapshotEvery %d, RelinkChunk %d, AddChunk %d, CompactBudget %d, LoadAheadMs %d, LoadMax %d: too small",
			o.SegmentSize, o.SnapshotEvery, o.RelinkChunk, o.AddChunk, o.CompactBudget, o.LoadAheadMs, o.LoadMax)
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrOptions, errors.Join(errs...))
	}
	return nil
}

func (o Options) cancelWindowMs() int64 { return o.CancelWindow.Milliseconds() }

func (o Options) minNearSpan() int64 {
	return 2*o.FarSlotMs + 2*o.cancelWindowMs() + 2*o.SlotMs
}

// farSlots is the far ring size: the buckets of MaxDelay, plus the bucket
// being relinked, the partial bucket at each end and one spare so that a
// parked (rolled) record never shares a ring index with the bucket being
// relinked.
func (o Options) farSlots() int64 {
	ms := o.MaxDelay.Milliseconds()
	return (ms+o.FarSlotMs-1)/o.FarSlotMs + 3
}

func (o Options) geometry() checkpoint.Geometry {
	return checkpoint.Geometry{
		SlotMs:         o.SlotMs,
		NearSlots:      int64(o.NearSlots),
		FarSlotMs:      o.FarSlotMs,
		FarSlots:       o.farSlots(),
		CancelWindowMs: o.cancelWindowMs(),
	}
}

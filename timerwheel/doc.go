// Package timerwheel is the timer store of wheelmq (RocketMQ RIP-43 timer
// messages): the TimerLog, a two-level wheel whose slots point into it, the
// checkpoint and snapshot, relinking, cancels and recovery. It is pure
// storage and logic: no goroutines, no network, and no clock — every method
// that needs the time takes nowMs, so tests are deterministic. The stage
// actors in actors/ drive it.
//
// # Use
//
//	s, err := timerwheel.Open(timerwheel.Options{Dir: dir}, nowMs)
//	s.Add(timers, nowMs)          // enqueue-put: one record per timer, one TimerLog batch
//	b, err := s.Due(nowMs, 4096)  // dequeue-get: due timers in (EffMs, Seq) order
//	...                           // deliver b.Timers (b.Cancelled are suppressed)
//	s.Ack(b)                      // dequeue-put done
//	at, ok := s.NextDue()         // arm one timer
//	s.Flush()                     // every few ms: fsync log, snapshot, checkpoint
//
// # Design
//
// Every timer is one 88-byte record in the TimerLog (package timerlog). A
// record is linked into a slot: slots hold only the newest record of their
// chain, and each record points to the previous one of the same slot, as in
// RocketMQ. Pending timers therefore live on disk; memory holds the slot
// arrays (32 bytes per slot, about 6 MiB with the defaults, whatever the
// number of timers) and the records of the slots being drained.
//
//   - The near wheel has NearSlots slots of SlotMs (default 131072 x 10 ms,
//     21.8 min). A timer whose effective time is before the relink boundary
//     goes there.
//   - The far wheel has one bucket per FarSlotMs (default 10 min) up to
//     MaxDelay (default 365 days). One bucket before a bucket starts, Due
//     relinks it: its records are copied, in atomic chunks, into the near
//     wheel and the bucket is cut off by a mark record. Only the small
//     record moves, never the message, and only once (a delay beyond the far
//     span parks the record in the last bucket and moves it again then).
//   - Due loads near slots into a heap as the clock reaches them and
//     releases records with EffMs <= nowMs in (EffMs, Seq) order, in
//     batches. EffMs is DeliverMs (raised to the dequeue position for a
//     timer that arrives already due), so a timer is never released early,
//     and released at its millisecond: the slot width only sets the
//     granularity of NextDue.
//   - A cancel (KindCancel) is released CancelWindow+1 ms before its
//     DeliverMs and suppresses every later-released normal timer with the
//     same KeyHash and a DeliverMs within CancelWindow of its own, in
//     whatever slot: the cancel and its target need not share a slot.
//   - The dequeue order is total: (EffMs, Seq). Ack records how far the
//     dequeue side got; after a crash Due releases again exactly the timers
//     after the last checkpointed Ack, so replays are bounded by what was
//     acknowledged since the last Flush and are recognisable by their
//     cursor (and by CommitLogOffset, stable across relinks).
//   - Add skips timers whose consume-queue offset is not above the highest
//     one added, so the enqueue side can replay its queue after a restart
//     without adding anything twice.
//
// # Files
//
//	<Dir>/timerlog/00000000000000000001 ...  TimerLog segments (timerlog)
//	<Dir>/checkpoint                         two alternating copies (checkpoint)
//	<Dir>/wheel.snap                         slot snapshot (checkpoint)
//
// The byte layouts are in the documentation of packages timerlog and
// checkpoint, and in docs/timer-formats.md; the reasoning (never early,
// crash and replay, memory) is in docs/timer.md.
//
// # Crash safety
//
// Flush syncs the TimerLog, then writes the snapshot (if due) and then the
// checkpoint, so no position on disk is ahead of durable data. Open repairs
// a torn TimerLog tail (cut at the last complete atomic group), loads the
// snapshot and replays every record after it: each record carries the slot
// it was linked into, and marks carry the state they left, so replay
// rebuilds the exact wheel. A write or sync error makes the store refuse
// further work (ErrFailed) until it is reopened.
//
// # Damaged records
//
// A TimerLog record that fails its checks (bit rot in synced data) is
// counted (Stats.Corrupt, and Options.Corruption once per record) and, under
// the default corruption.PolicySkip, passed over: replay skips it, and a
// slot chain that meets it goes on at the previous record of the same slot,
// found by scanning the log from the slot's first record (the record's own
// prev pointer is lost with it). Only the damaged record's timer is lost.
// Under PolicyStop the store fails with an error wrapping
// corruption.ErrStop.
package timerwheel

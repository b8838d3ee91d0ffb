// Package retention is the retention stage: it deletes whole CommitLog
// segments that are older than the retention (RocketMQ's fileReservedTime,
// deleteWhen and disk ratios), rolls long-pending timer messages forward
// so that they do not keep old segments alive, has the consume queues
// follow, and samples the disk use that the send path checks.
//
// # When segments go
//
// Every Interval (10 s) a round looks at the segments oldest first. A
// segment is expired when its newest message was stored at least Retention
// (72 h) ago. Its age is taken from the data, not from the file: the store
// timestamp of the first message of the next segment bounds the store
// time of every message in it (the file's modification time is the
// fallback when that record cannot be read). Unlike a modification time it
// survives a copy or restore of the data directory and it is what the
// clock of a test moves against; it can be later than the true newest
// message by the time the segment was the newest one, and earlier by the
// writer's queueing delay (store timestamps are taken when a send is
// decoded), both negligible against hours of retention.
//
// Expired segments are deleted during the Schedule's windows (an hour from
// each configured local time, default 04:00, or any time), or at once when
// disk use reaches CleanRatio (0.75). At ForceRatio (0.85) segments are
// deleted whatever their age, oldest first. A round deletes at most
// MaxPerRound (10) segments, DeleteInterval (100 ms) apart, never the
// segment being written, and never a segment that reaches the lowest pin.
//
// # Pins
//
// A Pin is a named provider of the lowest CommitLog offset something still
// needs; the broker (actors/pipeline) lists them: the dispatch position
// (records not yet in the consume queues), the timer wheel (messages of
// pending timers), the timer enqueue position (timer messages not yet in
// the wheel), the timer replay position (write-backs not yet covered by a
// durable acknowledgement), unfinished transactions and the message index.
// More are one line each.
//
// # Rolling long timers
//
// When the timer wheel's pin is what holds expired segments back, the round
// copies the messages of the far-wheel timers that lie below the wanted
// limit to the end of the CommitLog (topic RollTopic, TIMER_ROLL_TIMES + 1,
// through the writer stage), fsyncs the CommitLog, reroutes each far
// bucket in the TimerLog to the copies (timerwheel.Store.Reroute, one
// atomic group per bucket), flushes the wheel, and only then deletes. A
// crash at any point leaves either the old references (the old segment is
// still there; the copies are unreferenced garbage) or the new ones (the
// copies are durable): never a lost or a doubled delivery, and the timers
// keep their delivery time. See docs/timer.md.
//
// # Consume queues
//
// Before a segment is deleted, the dispatch stage (the only writer of the
// consume queues) trims every queue below its end (dispatch.Trim): the
// queue's minimum moves to the first unit still in the CommitLog and
// whole files below it go.
//
// # Disk
//
// Every SampleInterval (1 s) the stage samples the data directory's file
// system (statfs) into a Disk, which the request router reads without a
// syscall: at FullRatio (0.90) sends are refused with SERVICE_NOT_AVAILABLE
// and RocketMQ's "disk is full" remark, and accepted again below it.
// Transitions are logged once.
//
// # State
//
// The stage persists nothing of its own: a segment's age is read from the
// data, the pins come from their owners, and a round is idempotent (a trim
// or a deletion done twice is a no-op; a roll interrupted leaves only
// unreferenced copies). A restarted stage, or a restarted broker, simply
// runs the next round. RunNow starts a round at once (tests, and a future
// admin request).
package retention

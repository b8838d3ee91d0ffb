// Package consumequeue implements RocketMQ's consume queue: per (topic,
// queueId) an index of fixed-size units pointing into the CommitLog.
//
// # Units
//
// A unit is 20 bytes, big-endian, exactly as in RocketMQ:
//
//	 0                               8               12                              20
//	+-------------------------------+---------------+-------------------------------+
//	| commit-log offset (int64)     | size (int32)  | tags hash code (int64)        |
//	+-------------------------------+---------------+-------------------------------+
//	commit-log offset  global offset of the record in the CommitLog, >= 0, strictly
//	                   increasing inside a queue
//	size               record size (TOTALSIZE), > 0
//	tags hash code     Java String.hashCode of the TAGS property, widened to int64
//	                   (for SCHEDULE_TOPIC_XXXX: the delivery timestamp instead)
//
// The logical offset of a unit (the "queue offset" clients see) is its index
// in the queue: unit n lives at byte n*20 of the queue's concatenated files.
// Units carry no checksum (RocketMQ's layout); the queue is derived data that
// the dispatcher can rebuild from the CommitLog (see Queue.TruncateAbove and
// Queue.TruncateAt).
//
// A hole unit has size -1 (HoleSize): the record for that queue offset was
// lost to CommitLog damage, and the hole keeps the unit index equal to the
// QUEUEOFFSET of the records after it. Its commit-log offset only keeps the
// ordering (it lies between its neighbours'); readers skip holes. This is
// wheelmq's addition to RocketMQ's layout.
//
// # Files
//
//	<dir>/<topic>/<queueId>/<20-digit logical offset of the file's first unit>
//
//	<dir>/TopicTest/0/00000000000000000000   units 0 .. UnitsPerFile-1
//	<dir>/TopicTest/0/00000000000000300000   units 300000 .. 599999
//
// Each file holds UnitsPerFile units (default 300,000 = 6,000,000 bytes) back
// to back from its start, without header or padding. Unlike RocketMQ, files
// are named by the logical (unit) offset of their first unit, not by its byte
// offset, and they are not preallocated: a file is as long as the units in it.
// Every file but the last is full. queueId is the decimal queue id; topic
// names are limited to RocketMQ's characters [%|a-zA-Z0-9_-] (1..255 bytes),
// so a topic is always a plain directory name.
//
// These constants are part of the on-disk format and must not change.
//
// # Recovery
//
// Open loads every queue. Files must be named by multiples of UnitsPerFile
// and be contiguous (ErrLayout otherwise). A non-last file that is not full
// means later data cannot be trusted: that file is treated as the last one and
// the files after it are deleted. The last file is then scanned: a partial
// unit at its end is cut, and so is everything from the first unit that is
// not sane (size <= 0 but not a hole, negative offset, or an offset not above
// the previous unit's; a zero-filled tail is caught this way); CutAtOpen
// reports the bytes cut. The caller then aligns the queue with the CommitLog
// using TruncateAbove(commitLog.MaxOffset()), and the dispatcher adds again
// from the CommitLog what was cut.
//
// # Concurrency
//
// Store methods are safe for concurrent use. Per queue: one writer (the
// dispatcher) calls Append, TruncateAbove and Reopen, never concurrently
// with each other; Read, MaxOffset, MinOffset, LastUnit, SearchByPhysOffset
// and Failed are safe from any goroutine at any time (writes use pwrite,
// reads pread; MaxOffset is published after the bytes are written). Sync
// may run concurrently with Append. A reader racing with TruncateAbove may
// get fewer units than asked for or ErrOutOfRange.
//
// The file list is guarded by a RWMutex and a reader holds its read lock
// for the whole pread (see Queue.pin); files are closed only under the
// write lock (Reopen swapping in new handles, a rollback or truncation
// dropping files, close), so no reader ever reads a closed file. This is
// the same rule as the CommitLog's: "pread under the read lock".
// MinOffset and MaxOffset take no lock, and Store.Lookup takes only the
// queue map's read lock, which is never held across file I/O (queue
// creation and deletion do their directory work under a separate mutex):
// the network event loops call them.
// Lock order: Store.dirs, then Store.queues, then Queue.synced, then
// Queue.files; the sticky error's mutex is a leaf.
//
// # Failures
//
// A failed write makes Append truncate the queue back to its state before the
// call. A failed fsync, or a failed rollback, is sticky for that queue: later
// Append, TruncateAbove and Sync calls return ErrFailed (Queue.Failed
// reports it, Store.FailedQueues lists such queues) until the queue is
// reopened. Queue.Reopen opens its files again with new handles, runs the
// load-time recovery on them, swaps them in and clears the error; units it
// cut are re-dispatched from the CommitLog by the dispatcher.
package consumequeue

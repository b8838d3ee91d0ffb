// Package commitlog implements wheelmq's CommitLog: a segmented, append-only
// log of RocketMQ stored-message records addressed by global byte offset.
//
// # Records
//
// The record layout belongs to package storage/message. The commit log treats
// a record as opaque bytes except for three fields (big-endian):
//
//	 0      4      8                             28             36
//	+------+------+------- ... -------+---------+--------------+--- ... ---+
//	|TOTAL | MAGIC|                             | PHYSICALOFFSET|           |
//	| SIZE | CODE |                             |   (int64)     |           |
//	+------+------+------- ... -------+---------+--------------+--- ... ---+
//	TOTALSIZE  int32  = len(record), at least MinRecordSize (36)
//	MAGICCODE  uint32 = 0xDAA320A7 (V1) or 0xDAA320AB (V2)
//	PHYSICALOFFSET    = the record's global offset; Append patches it in place
//
// # Segment files
//
// The log lives in one directory. Each segment file is named by the 20-digit,
// zero-padded global offset of its first byte (00000000000000000000,
// 00000000001073741824, ...), like RocketMQ. Every segment covers exactly
// SegmentSize logical bytes; files are not preallocated, so a file is only as
// long as the bytes written to it. A segment holds entries back to back from
// its start:
//
//	segment file (SegmentSize logical bytes)
//	+---------+---------+-----+---------+-------------+- - - - - - - - +
//	| entry 0 | entry 1 | ... | entry n | blank (opt) |  (not written) |
//	+---------+---------+-----+---------+-------------+- - - - - - - - +
//
//	entry = record followed by its CRC32C
//	+--------------------------------------+-----------------+
//	| record (TOTALSIZE bytes, see above)  | CRC32C (uint32) |
//	+--------------------------------------+-----------------+
//	CRC32C is the Castagnoli checksum of the record bytes as stored (after the
//	PHYSICALOFFSET patch). It is wheelmq's own whole-record check: it is not
//	part of the RocketMQ record and is never sent to clients.
//
//	blank marker (8 bytes), written when the next entry does not fit in the
//	rest of the segment and at least 8 bytes remain:
//	+-----------------------------+-----------------------+
//	| TOTALSIZE int32 = remaining | MAGIC = 0xCBD43194    |
//	+-----------------------------+-----------------------+
//	"remaining" counts from the marker's first byte to the segment end.
//
// A record's offset is the global offset of its first byte; the next entry
// starts at offset + TOTALSIZE + 4, or at the next segment's start when the
// entry does not fit (after a blank marker, or directly when fewer than 8 bytes
// remain). Global offset = segment name + position inside the file.
//
// These constants are part of the on-disk format and must not change. To
// change the format, add a new record magic (the reader must accept the
// current and the previous magic) rather than changing the framing.
//
// # Recovery
//
// Open scans the last segment (the previous one too when the last is empty, or
// everything from the segment containing Options.RecoverFrom) from its start.
// A segment is fsynced when the log rolls over to the next one, so only the
// last segment can hold bytes a power cut may take: scanning it finds every
// torn tail.
// Each entry is checked: sane size, magic V1/V2/blank, CRC32C and the
// PHYSICALOFFSET field. A bad span followed by an entry that verifies is
// damage inside the log (bit rot, or pages written back out of order): it is
// kept and listed in RecoveryInfo.Damaged, since cutting there would drop the
// valid records after it. The file is truncated at the first bad or torn span
// with nothing valid after it, and all later segments are deleted;
// RecoveryInfo reports what was cut. A blank marker at the very end of the
// log (its segment's successor is missing) is torn state and is removed as
// well, with any damage right before it.
//
// # Damage
//
// Readers meet damage as ErrCorrupt from Read, ReadAt and ReadBlock. A
// sequential reader that skips it (the consume-queue dispatcher) asks
// NextValid for the next entry that verifies: when the damaged entry's header
// is intact that is the entry right after it, otherwise the first position
// further on whose bytes form a verified entry. ScanSegment walks a segment
// file read-only and classifies every span (records, the blank marker,
// damaged and torn spans) for recovery and the inspection tools.
//
// # Concurrency
//
// One writer, many readers. Append, AppendRaw, Truncate and Reopen must
// not be called concurrently with each other or themselves (the caller,
// the CommitLog writer actor on a master or the replication receiver on a
// replica, serializes them). Sync may run concurrently with Append (for
// example from a separate flusher). ReadAt, Read, ReadBlock, ReadRaw, MaxOffset,
// FlushedOffset, MinOffset and Failed are safe from any goroutine at any
// time, concurrently with Append, Sync and Reopen: writes use pwrite and
// reads use pread, and readers see a record as soon as Append has returned
// (before Sync), because MaxOffset is published only after the bytes are
// written. Close must be called once, after the writer and readers are done.
//
// The segment set (the list of open files) is guarded by a RWMutex, and a
// reader holds its read lock for the whole pread, not only for the lookup
// (see pin). Whoever closes a file (Reopen swapping in new handles, a
// rollback dropping a segment it created, Close) does it under the write
// lock, so no reader ever reads through a closed handle. The write lock is
// taken only for those and to add a new segment (once per SegmentSize
// bytes); a pread of a cached page takes microseconds, so the writer waits
// for readers at most that long. We chose this over reference-counted
// handles (close the old handle when its last reader lets go): it needs no
// per-read atomics and keeps one obvious rule, "pread under the read lock".
// Lock order: syncMu, then segs; the sticky error's mutex is a leaf.
//
// # Replication
//
// A replica's log is byte-identical to its master's. ReadRaw returns stored
// bytes (whole entries inside one segment, ended by the segment's blank
// marker where there is one); AppendRaw writes such a span at the log end
// after verifying every entry, rolling segments at the same places as the
// master; Truncate cuts the log back to an entry boundary (a replica's
// consistent point, a promoted master's last whole record), removing later
// segments first so that a crash part-way leaves a valid prefix.
//
// # Failures
//
// A failed write (for example ENOSPC) makes Append truncate the log back to
// the state before the call and return the error; later appends may succeed.
// A failed fsync, or a failed rollback, is sticky: the kernel may have dropped
// the dirty pages, so every later Append and Sync returns ErrFailed (Failed
// reports it). Reads keep working. Reopen recovers such a log in place: it
// opens the segment files again with new handles, runs Open's tail recovery
// on them from the segment holding FlushedOffset (so whatever the kernel
// really kept is verified record by record, and a torn tail is cut), swaps
// the new handles in, closes the old ones and clears the sticky error. If
// recovery cut bytes readers had already seen (ReopenInfo.Lost), the consume
// queues built on them are stale: the writer stage then stops for good and
// the next process start realigns them (storage.Open).
package commitlog

// Package timerlog is the TimerLog of the timer store: an append-only log of
// small fixed-size timer records in segment files of github.com/tidwall/wal's
// binary format, wrapped with our own frame (length, CRC32C, version) and a
// tail repair, and read back by position.
//
// The package writes and reads the files itself, every byte through a
// storage/vfs file system (Options.FS), so that tests can inject faults and
// crashes; tidwall/wal (which calls package os itself) is used only by the
// tests, as the reference for the format: the same batches written by wal
// and by this package give byte-identical directories, wal reads every entry
// this package wrote, and this package opens what wal wrote, including what
// a crash in the middle of wal's TruncateFront or TruncateBack left (the
// .START and .END files of versions that wrote through wal; Open finishes
// that truncation as wal.Open would, and removes wal's .TEMP files).
//
// # Segments
//
// A segment file is named %020d of the sequence of its first entry (the
// first segment of a new log is 00000000000000000001) and holds the entries
// that follow it, back to back, with no header. A segment ends, as in wal,
// after the entry that brings it to SegmentSize bytes or more; a batch that
// starts on a segment already larger than SegmentSize (written with a larger
// one) starts a new segment first.
//
// # Entry layout
//
// wal's binary entry is uvarint(len) followed by the payload. Every payload
// is one 88-byte record, so every entry is exactly 89 bytes and entry seq of
// the segment file named %020d(first) starts at byte (seq-first)*89. All
// integers are big-endian.
//
//	+------+--------------------------------------------------------------+
//	| 0x58 | record (88 bytes)                                            |
//	+------+--------------------------------------------------------------+
//	  uvarint length (88)
//
//	record:
//	 0        4      6     7      8       9          12     16     24
//	+--------+------+-----+------+-------+----------+------+------+------+
//	| crc32c | len  | ver | kind | flags | reserved | size | seq  | prev |
//	| u32    | u16  | u8  | u8   | u8    | 3 x 0    | u32  | u64  | u64  |
//	+--------+------+-----+------+-------+----------+------+------+------+
//	 32     40          48      56        64         72         80        88
//	+------+-----------+-------+---------+----------+----------+---------+
//	| slot | deliverMs | effMs | addedMs | clOffset | cqOffset | keyHash |
//	| i64  | i64       | i64   | i64     | i64      | i64      | u64     |
//	+------+-----------+-------+---------+----------+----------+---------+
//
// Fields:
//
//   - crc32c: CRC-32C (Castagnoli) of bytes 4..88 (everything after it).
//   - len: 88. ver: 1. reserved: zero.
//   - kind: 1 normal timer, 2 cancel, 3 relink mark, 4 move mark.
//   - flags: bit 0 commit (ends an atomic group), bit 1 far wheel, bit 2
//     copy (relinked or compacted), bit 3 rolled (parked in the last far
//     bucket because its time was beyond the far wheel).
//   - size: CommitLog size of the timer message (marks: normal count left).
//   - seq: the sequence (wal's index) of this entry (1, 2, ...); checked on
//     every read.
//   - prev: seq of the previous record in the same slot chain, 0 for the
//     first (marks: the bucket's new head).
//   - slot: absolute slot number in the near (effMs/SlotMs) or far
//     (effMs/FarSlotMs) wheel, as chosen when the record was written.
//   - deliverMs, effMs, addedMs: requested, effective and enqueue times (ms).
//   - clOffset, cqOffset: CommitLog offset of the message and its offset in
//     the rmq_sys_wheel_timer consume queue (marks: cancel count left).
//   - keyHash: FNV-1a 64 of "<realTopic>+<uniqKey>"; 0 = not cancellable.
//
// # Durability, atomic groups and tail repair
//
// Append writes a batch with positional writes and no fsync; SyncTo(seq)
// fsyncs the tail segment and, when segment files were created since the
// last call, the directory, so no record is reported durable before its
// file's directory entry is. A segment is fsynced when the next one starts
// (as wal does), so only the newest segment can hold unsynced entries.
// TruncateFront removes whole segment files, oldest first, and fsyncs the
// directory. Options.NoSync skips all of these fsyncs (tests, benchmarks).
//
// A group of records that must appear together (a relink chunk and its
// mark) carries FlagCommit only on its last record; a plain timer carries
// it on itself. Open repairs the tail before it writes: after the caller's
// MinKeep (the last sequence known to be synced) the log is cut at the first
// partial or invalid entry (torn or out-of-order write-back), then every
// record after the last FlagCommit record is cut (incomplete group), walking
// back over segments if a group spans them. Invalid entries at or below
// MinKeep were synced, so they are bit rot: they stay (with the length byte
// restored, so the segment still parses as wal's format) and reading them
// fails with ErrCorrupt. The directory is fsynced after segment files are
// created, truncated or removed (wal does not).
//
// After a failed write or fsync the log is failed (ErrFailed) until it is
// reopened: the state of the page cache is then unknown.
//
// # Concurrency
//
// A Log may be used from several goroutines; SyncTo does not block Append
// while it fsyncs. Records are immutable once written.
package timerlog

// Package timerlog is the TimerLog of the timer store: an append-only log of
// small fixed-size timer records kept in github.com/tidwall/wal segment
// files, wrapped with our own frame (length, CRC32C, version) and a tail
// repair, and read back by position.
//
// # Entry layout
//
// wal stores a binary entry as uvarint(len) followed by the payload. Every
// payload is one 88-byte record, so every entry is exactly 89 bytes and entry
// seq of the segment file named %020d(first) starts at byte
// (seq-first)*89. All integers are big-endian.
//
//	+------+--------------------------------------------------------------+
//	| 0x58 | record (88 bytes)                                            |
//	+------+--------------------------------------------------------------+
//	  wal's uvarint length
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
//   - seq: the wal index of this entry (1, 2, ...); checked on every read.
//   - prev: seq of the previous record in the same slot chain, 0 for the
//     first (marks: the bucket's new head).
//   - slot: absolute slot number in the near (effMs/SlotMs) or far
//     (effMs/FarSlotMs) wheel, as chosen when the record was written.
//   - deliverMs, effMs, addedMs: requested, effective and enqueue times (ms).
//   - clOffset, cqOffset: CommitLog offset of the message and its offset in
//     the rmq_sys_wheel_timer consume queue (marks: cancel count left).
//   - keyHash: FNV-1a 64 of "<realTopic>+<uniqKey>"; 0 = not cancellable.
//
// # Atomic groups and tail repair
//
// Records are appended in wal batches with NoSync; SyncTo fsyncs. A group of
// records that must appear together (a relink chunk and its mark) carries
// FlagCommit only on its last record; a plain timer carries it on itself.
// Open repairs the tail before wal sees it: after the caller's MinKeep (the
// last sequence known to be synced) the log is cut at the first partial or
// invalid entry (torn or out-of-order write-back), then every record after
// the last FlagCommit record is cut (incomplete group), walking back over
// segments if a group spans them. Invalid entries at or below MinKeep were
// synced, so they are bit rot: they stay (with wal's length byte restored)
// and reading them fails with ErrCorrupt. The directory is fsynced after
// segment files are created, truncated or removed (wal does not).
//
// # Concurrency
//
// A Log may be used from several goroutines; SyncTo does not block Append
// while it fsyncs. Records are immutable once written.
package timerlog

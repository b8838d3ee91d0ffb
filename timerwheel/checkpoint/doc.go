// Package checkpoint holds the two small state files of the timer store:
// the checkpoint (progress positions, written on every flush) and the wheel
// snapshot (slot heads, written every so many records so that recovery only
// replays the TimerLog records after it). All integers are big-endian. Both
// are read and written through a storage/vfs file system.
//
// # Checkpoint file
//
// Two 128-byte copies at byte 0 and byte 512 of one file, written
// alternately (copy index = counter mod 2) with one fsync each. A torn
// write damages only the copy being written; Open keeps the valid copy with
// the higher counter. Open fsyncs the directory when it creates the file.
//
//	 0        4      6     7     8         16        24         32
//	+--------+------+-----+-----+---------+---------+----------+
//	| crc32c | len  | ver | 0   | counter | ackedMs | ackedSeq |
//	| u32    | u16  | u8  | u8  | u64     | i64     | u64      |
//	+--------+------+-----+-----+---------+---------+----------+
//	 32           40            48               56              64
//	+------------+-------------+----------------+---------------+
//	| flushedSeq | snapshotSeq | relinkedUpToMs | enqueueCQOff  |
//	| u64        | u64         | i64            | i64           |
//	+------------+-------------+----------------+---------------+
//	 64       72          80          88         96               104        128
//	+--------+-----------+-----------+----------+----------------+----------+
//	| slotMs | nearSlots | farSlotMs | farSlots | cancelWindowMs | reserved |
//	| i64    | i64       | i64       | i64      | i64            | 24 x 0   |
//	+--------+-----------+-----------+----------+----------------+----------+
//
// crc32c is CRC-32C (Castagnoli) of bytes 4..128; len is 128, ver 1.
//
// # Snapshot file
//
// Replaced atomically (temporary file, fsync, rename, directory fsync).
//
//	 0          8     9          16    24        32         40
//	+----------+-----+----------+-----+---------+----------+
//	| WMQWHEEL | ver | 7 x 0    | seq | ackedMs | ackedSeq |
//	+----------+-----+----------+-----+---------+----------+
//	 40               48             56                96
//	+----------------+--------------+-----------------+
//	| relinkedUpToMs | enqueueCQOff | geometry (5x8)  |
//	+----------------+--------------+-----------------+
//	 96       100     104     108   112
//	+--------+-------+-------+-----+---------------------------------------+
//	| nNear  | nFar  | nSeg  | 0   | nNear+nFar slots, nSeg segments, crc  |
//	| u32    | u32   | u32   | u32 |                                       |
//	+--------+-------+-------+-----+---------------------------------------+
//
//	slot (40 bytes):    no i64 | head u64 | first u64 | n u32 | nc u32 | minCLOffset i64
//	segment (16 bytes): first u64 | minCLOffset i64
//	trailer (4 bytes):  CRC-32C of every byte before it
//
// The geometry block has the same five fields as in the checkpoint. Slots
// list only non-empty slots, near wheel first. A slot's minCLOffset is at
// or below the lowest CommitLog offset its normal records refer to
// (math.MaxInt64: none); CommitLog retention keeps everything from the
// lowest of them on. ver is 2; version 1 (32-byte slots without
// minCLOffset) is still read, its slots' minimums then come from the
// segments' (a coarser bound).
package checkpoint

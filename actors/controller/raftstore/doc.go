// Package raftstore is the controller's raft storage on storage/vfs: a
// raft.LogStore (LogStore, file raft.log), a raft.StableStore (StableStore,
// file raft-stable) and a raft.SnapshotStore (SnapshotStore, directory
// raft-snapshots), so that the power-loss tests (vfs/crashfs) reach the
// controller's raft state as they reach the broker's stores. It replaces
// raft-boltdb (raft.db) and hashicorp's FileSnapshotStore (snapshots/);
// MigrateBolt converts what an earlier version left, once. See
// docs/controller.md and docs/formats.md ("Controller raft storage").
//
// # raft.log
//
// The log file is an append-only sequence of operations, replayed in order
// at Open into an in-memory map from index to entry (the controller's log
// is small: raft compacts it behind every snapshot, TrailingLogs entries
// are kept). All integers are big-endian.
//
//	file   := magic frame*
//	magic  := "WMQRLOG1"                     8 bytes (format version 1)
//	frame  := length:u32 crc:u32 body        crc = CRC-32C (Castagnoli) of body
//	body   := kind:u8 payload                length = len(body), 2..MaxFrame
//	kind 1 (entries, one StoreLogs call):
//	  payload := count:u32 entry{count}
//	  entry   := index:u64 term:u64 type:u8 appendedAt:i64 (unix ns, 0 = zero time)
//	             dataLen:u32 data extLen:u32 extensions
//	kind 2 (delete range, one DeleteRange call):
//	  payload := min:u64 max:u64
//
// Replaying frame by frame gives raft's semantics: an entry stored again
// under an index replaces the earlier one, a delete-range frame removes
// every entry in [min, max]. These constants are part of the format and
// must not change; a new layout takes a new magic.
//
// # Durability
//
// StoreLogs writes one frame and fsyncs before it returns (raft acks an
// AppendEntries only after); DeleteRange fsyncs too. Only the frame being
// written can be incomplete after a power cut, so at Open a frame that is
// short or fails its CRC, with no valid frame anywhere after it, is a torn
// tail: it is cut (the file truncated and synced) and reported in
// Recovery, never an error. A bad frame followed by a valid one is
// corruption of synced data: Open fails with an error wrapping ErrCorrupt
// that names the file and the offset. When a DeleteRange leaves the file
// more than half dead (and at least Options.RewriteMinBytes), the live
// entries are rewritten to raft.log.tmp, fsynced, renamed over raft.log
// and the directory is fsynced: a crash leaves the old file or the new
// one, both replaying to the same entries. After a failed write or fsync
// the store refuses every later write (the error is kept and returned).
//
// # raft-stable
//
// The stable store's keys (raft's CurrentTerm, LastVoteTerm, LastVoteCand)
// live in one small file replaced atomically on every Set (write a
// temporary file, fsync, rename, fsync the directory: vfs.WriteFileAtomic):
//
//	file  := magic count:u32 pair{count} crc:u32   crc = CRC-32C of all bytes before it
//	magic := "WMQRSTB1"
//	pair  := keyLen:u32 key valLen:u32 val
//
// A uint64 value (SetUint64) is stored as its 8 big-endian bytes under the
// key, as raft-boltdb does, so a migrated raft.db's values copy unchanged.
//
// # raft-snapshots
//
// SnapshotStore (a raft.SnapshotStore) keeps one file per snapshot in
// raft-snapshots/, named <term>-<index>-<unix ms>.snap. A snapshot is
// written to <id>.snap.tmp, fsynced, renamed and the directory fsynced, so
// a crash leaves it whole or absent (unfinished .tmp files are removed at
// open); the newest retain are kept. The meta sits behind the state so
// that the state can be streamed before its size is known:
//
//	file    := magic state meta metaLen:u32 crc:u32   crc = CRC-32C of all bytes before it
//	magic   := "WMQRSNP1"
//	meta    := JSON of raft.SnapshotMeta (Version, ID, Index, Term,
//	           Configuration, ConfigurationIndex, Size = len(state))
//
// A file that fails its checksum is refused by Open and left out of List.
//
// # Concurrency
//
// Both stores are safe for concurrent use (raft reads the log from its
// replication goroutines while the leader appends); each holds one
// sync.RWMutex and starts no goroutines.
package raftstore

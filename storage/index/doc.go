// Package index is wheelmq's message-key index: it maps "<topic>#<key>"
// (a message's UNIQ_KEY and each space-separated piece of its KEYS) to the
// CommitLog offsets and store times of the records that carry it, for
// QUERY_MESSAGE and the lookups by message id of admin tools.
//
// The design follows RocketMQ's IndexFile (hash slots heading chains of
// fixed-size entries, a bounded number of entries per file, then a new
// file) with three changes: 64-bit key hashes instead of Java's 32-bit
// String.hashCode (collisions are negligible, so lookups rarely return
// records of other keys), full millisecond store timestamps instead of
// seconds since the file's start, and a checksum on every entry and on the
// header, which carries the indexed-up-to position for crash recovery.
//
// # Files
//
//	<dir>/00000000000000000001.idx, 00000000000000000002.idx, ...
//
// Files are numbered from 1; entries in them are in CommitLog order. The
// last file is active (appended to); every other file is sealed (full and
// immutable). Byte layout, big-endian:
//
//	0          64         128                     128+4*slots
//	+----------+----------+-----------------------+----------------------------+
//	| header A | header B | slot table (sealed)   | entry 1 | entry 2 | ...    |
//	+----------+----------+-----------------------+----------------------------+
//
//	header copy (64 bytes), the valid copy with the larger generation wins:
//	 0 magic       uint32  0x574D4958 ("WMIX")
//	 4 version     uint16  1
//	 6 flags       uint16  bit 0: sealed
//	 8 generation  uint64  +1 at each header write; written to copy generation%2
//	16 slots       uint32  hash slots in this file
//	20 maxEntries  uint32  entries this file may hold
//	24 entries     uint32  entry count (authoritative when sealed)
//	28 reserved    uint32  0
//	32 position    int64   CommitLog offset below which every record is indexed
//	40 minTime     int64   smallest store timestamp of an entry (ms)
//	48 maxTime     int64   largest store timestamp of an entry (ms)
//	56 crc         uint32  CRC32C of bytes 0-55
//	60 reserved    uint32  0
//
//	slot table: slots x uint32, the number of the newest entry whose hash
//	falls in the slot (hash mod slots), 0 = none. Written when the file is
//	sealed; the active file keeps it in memory (rebuilt by a scan on open).
//
//	entry n (32 bytes) at 128 + 4*slots + 32*(n-1), numbered from 1:
//	 0 keyHash     uint64  FNV-1a 64 of "<topic>#<key>"
//	 8 offset      int64   CommitLog offset of the record
//	16 storeTime   int64   the record's store timestamp (ms)
//	24 prev        uint32  previous entry of the same slot, 0 = end of chain
//	28 crc         uint32  CRC32C of bytes 0-27
//
// With the defaults (DefaultSlots, DefaultMaxEntries) a full file is 66 MiB
// and chains average four entries. These constants are part of the on-disk
// format and must not change; a new layout takes a new version number, and
// Open must keep reading the previous one.
//
// # Writing and durability
//
// Add queues entries; Flush assigns them numbers and chain links and writes
// them with one pwrite per file (a full file is sealed: slot table written
// and fsynced, then a header saying sealed, fsynced; the next file is
// created holding the last durable position); Sync fsyncs the active file
// and then writes its header with the flushed position and fsyncs again.
// So a header's position never covers entries that are not durable.
//
// # Recovery
//
// Open reads each file's newest valid header. A file with no valid header
// is deleted together with every later file (the index is derived data:
// the records are indexed again from the CommitLog). A sealed file whose
// last entry does not read back, and a file that was being sealed, are
// rescanned (and sealed again). The active file is scanned from its first
// entry and cut before the first entry that has a bad checksum, an offset
// below its predecessor's or a chain link different from the slot head it
// should follow: a torn or zero-filled tail goes. Finally every entry at or
// above the durable position is removed (possibly reopening the last sealed
// file as the active one), so indexing can resume at Position() and add
// each record exactly once. TruncateFrom does the same for a lower position
// (after the CommitLog lost its tail).
//
// # Lookups
//
// Lookup walks the files newest first, skipping those whose time bounds miss
// the query, and follows one slot chain per file newest entry first, keeping
// entries whose hash and store time match, until the result cap or a scan
// budget (Options.MaxScan entries) is reached. Results are sorted by
// CommitLog offset.
//
// # Concurrency
//
// An Index has one owner (the index stage); it is not safe for concurrent
// use.
package index

// Package ha holds the on-disk and wire formats of wheelmq's replication
// (issue 17, "controller mode, strict"): the epoch file that records which
// master epoch wrote which part of the CommitLog, the frames of the HA
// stream between a master and its replicas, and the consistent-point rule a
// replica uses to cut a divergent tail. It has no goroutines and no
// sockets; actors/replication drives it.
//
// # Epoch file
//
// <data>/ha/epochs lists (epoch, startOffset) pairs in ascending order: the
// bytes of the CommitLog from startOffset up to the next entry's start (the
// log end for the last entry) were written by the master of that epoch.
// Every entry carries its own CRC32C; a short or bad entry ends the list
// (torn tail). Every change rewrites the whole file atomically (temporary
// file, fsync, rename, directory fsync), so a crash leaves the old or the
// new list. Byte layouts: docs/formats.md, "HA epoch file".
//
// # Frames
//
// Every frame is length-prefixed, typed and checksummed, big-endian:
//
//	+-----------+--------+------------------+-----------+
//	| LEN u32   | TYPE u8| payload          | CRC32C u32|
//	+-----------+--------+------------------+-----------+
//	LEN counts TYPE, payload and CRC32C; CRC32C covers TYPE and payload.
//
// Both ends first prove the group's secret to each other (auth.go: the
// challenge constants, the peer ids and the one fixed Refusal); then the
// replica sends a Handshake; the master answers a HandshakeReply
// (accepted with its epoch list, or refused with a reason), then streams
// Transfer frames (an empty body is a heartbeat) while the replica sends
// Acks. Byte layouts: docs/formats.md, "HA stream".
package ha

// Package meta holds the broker's small persistent metadata: topic
// configuration, consumer offsets and binary checkpoints, each file written
// atomically (WriteFileAtomic: temp file, fsync, rename, fsync of the
// directory).
//
// # JSON files
//
// Topic configuration (topics.json), consumer offsets (consumerOffset.json)
// and subscription groups (subscriptionGroup.json, see subgroup.go) use
// RocketMQ's JSON shapes:
//
//	{"topicConfigTable":{"T":{"topicName":"T","readQueueNums":4,...}},
//	 "dataVersion":{"stateVersion":0,"timestamp":1700000000000,"counter":3}}
//	{"offsetTable":{"T@G":{"0":12,"1":7}}}
//
// Saving first copies the current file, if it parses, to <path>.bak, then
// replaces <path>. Loading reads <path>; if it is missing or unparsable and
// <path>.bak parses, the backup is used and a warning logged. A missing pair
// means "no data" (the caller applies defaults); an unparsable file without a
// usable backup is an error naming the path, never a silent reset.
//
// # Checkpoint file
//
// A checkpoint holds named int64 positions (CommitLog flushed offset, dispatch
// offset, timer queue offset, ...). Integers are big-endian; names are sorted
// and unique; CRC-32C (Castagnoli) covers every byte before it.
//
//	 0        4        6        8                12
//	+--------+--------+--------+----------------+
//	| magic  |version | flags  | count (uint32) |   magic = "WMCP" 0x574D4350,
//	+--------+--------+--------+----------------+   version = 1, flags = 0
//	| entry 0 ... entry count-1                 |
//	+--------+----------------------------------+
//	| crc32c (uint32) of all bytes above        |
//	+-------------------------------------------+
//
//	entry: +-------------+------------------+----------------+
//	       | nameLen (1) | name (nameLen)   | value (int64)  |
//	       +-------------+------------------+----------------+
//	       1 <= nameLen <= 64, name in [A-Za-z0-9._-]
//
// The magic, version and layout are frozen. To change the layout, bump the
// version, keep decoding version N-1 and write N; an unknown version is
// reported as ErrVersion, any other damage as ErrCorrupt.
//
// # Concurrency
//
// Functions are safe for concurrent use on different paths; callers
// serialize saves of one JSON file (one owner per file). SaveCheckpoint and
// UpdateCheckpoint serialize among themselves, so several owners may each
// update their own entry of one checkpoint file. A TopicTable is immutable
// and may be shared freely; an OffsetTable or Checkpoint is a plain value
// owned by its caller.
package meta

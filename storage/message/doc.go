// Package message encodes and decodes RocketMQ's stored-message record, the
// unit of the CommitLog and of PULL_MESSAGE response bodies, together with the
// pieces a broker needs around it: the properties string, message ids
// (offsetMsgId and UNIQ_KEY), the Java String.hashCode of tags stored in
// consume-queue units, and the SEND_BATCH_MESSAGE body.
//
// # Stored message record
//
// A record is written in RocketMQ's layout version 1 (MagicV1), so that the
// official clients, which always read a one-byte topic length, can decode pull
// responses made of records copied straight from the CommitLog. Integers are
// big-endian. A host is an IPv4 address (4 bytes) plus a port (int32), or an
// IPv6 address (16 bytes) plus a port when SysFlag carries SysFlagBornHostV6
// (0x10) for BORNHOST or SysFlagStoreHostV6 (0x20) for STOREHOST. Offsets in the
// diagram assume IPv4 hosts; with an IPv6 born host every field from
// STORETIMESTAMP on moves 12 bytes further, with an IPv6 store host every field
// from RECONSUMETIMES on moves another 12 bytes.
//
//	 0               4               8               12              16
//	+---------------+---------------+---------------+---------------+
//	| TOTALSIZE     | MAGICCODE     | BODYCRC       | QUEUEID       |
//	+---------------+---------------+---------------+---------------+
//	| FLAG          | QUEUEOFFSET (int64)           | PHYSICALOFFSET
//	+---------------+---------------+---------------+---------------+
//	  (int64)       | SYSFLAG       | BORNTIMESTAMP (int64)         |
//	+---------------+---------------+---------------+---------------+
//	| BORNHOST ip   | BORNHOST port | STORETIMESTAMP (int64)        |
//	+---------------+---------------+---------------+---------------+
//	| STOREHOST ip  | STOREHOST port| RECONSUMETIMES| PREPARED TX
//	+---------------+---------------+---------------+---------------+
//	  OFFSET (int64)| BODYLEN (n)   | BODY (n bytes) ...            |
//	+---------------+---------------+-------------------------------+
//	| TOPICLEN (1) | TOPIC (t bytes) | PROPSLEN (2) | PROPERTIES (p)  |
//	+--------------+-----------------+--------------+-----------------+
//
//	TOTALSIZE      int32  length of the whole record, this field included
//	MAGICCODE      int32  MagicV1 0xDAA320A7 (MagicV2 0xDAA320AB has a 2-byte TOPICLEN)
//	BODYCRC        int32  CRC-32 (IEEE) of the stored BODY bytes & 0x7FFFFFFF
//	QUEUEID        int32  consume queue id
//	FLAG           int32  user flag from the send request
//	QUEUEOFFSET    int64  logical offset of the message in its consume queue
//	PHYSICALOFFSET int64  CommitLog offset of this record
//	SYSFLAG        int32  SysFlag* bits (compression, transaction type, IPv6 hosts)
//	BORNTIMESTAMP  int64  producer clock, ms since the epoch
//	BORNHOST       8|20   producer address as seen by the broker
//	STORETIMESTAMP int64  broker clock, ms since the epoch
//	STOREHOST      8|20   broker address (part of the offsetMsgId)
//	RECONSUMETIMES int32  retry count
//	PREPARED TX    int64  prepared transaction offset
//	BODYLEN, BODY  int32 + n bytes (compressed when SYSFLAG has SysFlagCompressed)
//	TOPICLEN,TOPIC uint8 + t bytes, 1 <= t <= 127 (V2: uint16 + t bytes)
//	PROPSLEN,PROPS int16 + p bytes, p <= 32767, see EncodeProperties
//
// With IPv4 hosts a V1 record is 91 + n + t + p bytes long. The end of a
// CommitLog file is padded by a blank record: TOTALSIZE (the number of bytes
// left in the file) followed by MagicBlank 0xCBD43194; Decode reports it as
// ErrBlank.
//
// These constants and this layout are part of the wire format shared with
// RocketMQ clients and must not be changed. A future layout needs a new magic;
// decoders then accept the old and the new magic (N and N-1), encoders write
// the new one only once every consumer understands it.
//
// # Concurrency
//
// All functions are pure and safe for concurrent use; a UniqKeyGenerator is
// safe for concurrent use. Record.Body and Record.Properties returned by Decode
// alias the input slice: copy them if the input buffer is reused.
package message

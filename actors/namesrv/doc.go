// Package namesrv is wheelmq's embedded name server: the route table that
// RocketMQ brokers register with and that clients ask for topic routes, plus
// the broker-side helpers that build the registration requests.
//
// # Ownership
//
// Registry is a plain struct and is NOT safe for concurrent use. Exactly one
// actor owns it (see Props); everything else talks to that actor with
// Request messages. The actor's state is not persisted: after a restart the
// table is empty and fills again as brokers re-register (every 30 s by
// default), so a restart costs at most one registration period of
// TOPIC_NOT_EXIST answers.
//
// # Served request codes
//
//	103 REGISTER_BROKER                    broker -> name server
//	104 UNREGISTER_BROKER                  broker -> name server
//	105 GET_ROUTEINFO_BY_TOPIC             client -> name server
//	106 GET_BROKER_CLUSTER_INFO            admin  -> name server
//	206 GET_ALL_TOPIC_LIST_FROM_NAMESERVER admin  -> name server
//	216 DELETE_TOPIC_IN_NAMESRV            admin  -> name server
//
// Any other code is answered with 3 REQUEST_CODE_NOT_SUPPORTED. Handle never
// panics on bad input: a missing or malformed header field, undecodable body
// or checksum mismatch is answered with 1 SYSTEM_ERROR (as the Java name
// server does); a well-formed but unacceptable value (negative broker id,
// a broker address that would break the Go client's route parser, negative
// queue counts) with 29 INVALID_PARAMETER. The remark says which field.
//
// # Route JSON
//
// GET_ROUTEINFO_BY_TOPIC answers compact JSON (no whitespace anywhere) with
// quoted broker ids, because rocketmq-client-go slices the raw text of
// brokerAddrs between its first and last character, splits it on "," and
// each piece at its first ":":
//
//	{"brokerDatas":[{"brokerAddrs":{"0":"127.0.0.1:10911"},"brokerName":"broker-a",
//	  "cluster":"DefaultCluster","enableActingMaster":false}],"filterServerTable":{},
//	"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":4,
//	  "topicSysFlag":0,"writeQueueNums":4}]}
//
// (wrapped here for reading only). queueDatas and brokerDatas are sorted by
// brokerName; broker addresses containing ',', '"', '\' or white space are
// refused at registration.
//
// # Compressed REGISTER_BROKER body
//
// With header compressed=true the body is a zlib stream (java.util.zip
// DeflaterOutputStream, default wrapping) whose inflated bytes are, all
// integers big-endian int32:
//
//	+-------+--------------------+-------+--------------------------------+
//	| len D | DataVersion JSON   | count | count x (len T | TopicConfig)  |
//	| int32 | D bytes            | int32 | int32 + T bytes                |
//	+-------+--------------------+-------+--------------------------------+
//	+-------+--------------------+-------+--------------------------------+
//	| len F | filter server list | count | count x (len M | mapping JSON) |
//	| int32 | JSON array, F bytes| int32 | int32 + M bytes                |
//	+-------+--------------------+-------+--------------------------------+
//
// Each TopicConfig is Java's TopicConfig.encode() text, fields separated by
// one space: "topicName readQueueNums writeQueueNums perm topicFilterType",
// optionally followed by " " and an attributes JSON object (ignored). A JSON
// object is accepted too. The mapping section (static topics) is read and
// ignored; it may be absent altogether (brokers older than 5.0). The
// inflated size is capped at MaxInflatedBody.
//
// bodyCrc32, when non-zero, is RocketMQ's UtilAll.crc32 of the (possibly
// compressed) body: CRC-32/IEEE masked with 0x7FFFFFFF. The unmasked
// CRC-32/IEEE (as an unsigned or signed 32-bit decimal) is accepted as well.
//
// # Expiry
//
// Every broker entry carries its last registration time and its heartbeat
// timeout (header heartbeatTimeoutMillis, default 120 s). Expire drops the
// entries whose last registration is older than their timeout; the actor runs
// it every ScanInterval (default 5 s). A topic disappears from routes when no
// live broker serves it.
//
// A broker also leaves at once when the connection its last registration
// came over closes (a killed broker's kernel closes it): the server's
// OnClose sends ConnClosed and the actor calls DropConn, as RocketMQ's
// BrokerHousekeepingService does on channel close. A broker that registered
// again over a newer connection is kept.
//
// # Merging brokers
//
// Every broker registers its own topic table; routes are the union. A topic
// on broker-a and broker-b has one QueueData and one BrokerData per broker
// name in its route, and GET_BROKER_CLUSTER_INFO lists every broker name of
// each cluster. Several name servers do not talk to each other: brokers
// register with each one.
package namesrv

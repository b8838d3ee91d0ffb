// Package namesrv is wheelmq's embedded name server: the route table that
// RocketMQ brokers register with and that clients ask for topic routes, the
// persisted KV configuration (RocketMQ's kvConfig.json), plus the
// broker-side helpers that build the registration body.
//
// The stage takes typed calls (Call: one Go type per request kind, see
// call.go) and answers a typed Answer whose Status comes from one table
// (status.go); it knows nothing of the wire. The remoting codec in front of
// it, netloop/nsrvcodec, decodes frames into calls and encodes answers
// into RocketMQ's responses, and builds the broker's REGISTER_BROKER and
// UNREGISTER_BROKER requests.
//
// # Ownership
//
// Registry is a plain struct and is NOT safe for concurrent use. Exactly one
// actor owns it (see Producer); everything else talks to that actor with
// Request messages. The route table is not persisted: after a restart it
// is empty and fills again as brokers re-register (every 30 s by default),
// so a restart costs at most one registration period of TOPIC_NOT_EXIST
// answers. The KV configuration is persisted (see below).
//
// # Served request codes
//
//	100 PUT_KV_CONFIG                      admin  -> name server
//	101 GET_KV_CONFIG                      admin  -> name server
//	102 DELETE_KV_CONFIG                   admin  -> name server
//	103 REGISTER_BROKER                    broker -> name server
//	104 UNREGISTER_BROKER                  broker -> name server
//	105 GET_ROUTEINFO_BY_TOPIC             client -> name server
//	106 GET_BROKER_CLUSTER_INFO            admin  -> name server
//	206 GET_ALL_TOPIC_LIST_FROM_NAMESERVER admin  -> name server
//	216 DELETE_TOPIC_IN_NAMESRV            admin  -> name server
//	219 GET_KVLIST_BY_NAMESPACE            admin  -> name server
//	205 WIPE_WRITE_PERM_OF_BROKER          admin  -> name server
//	224 GET_TOPICS_BY_CLUSTER              admin  -> name server
//	304 GET_SYSTEM_TOPIC_LIST_FROM_NS      admin  -> name server
//	319 GET_NAMESRV_CONFIG                 admin  -> name server (the actor: Options.Settings)
//	327 ADD_WRITE_PERM_OF_BROKER           admin  -> name server
//
// (nsrvcodec.ServedCodes lists them; nsrvcodec.Permissions says what each
// needs under an ACL, checked by the process's name-server port before the
// request reaches the actor.) Any other code is answered with 3
// REQUEST_CODE_NOT_SUPPORTED (Unsupported). Nothing panics on bad input: a
// missing or malformed header field (refused by the codec), undecodable
// body or checksum mismatch is Failed, answered with 1 SYSTEM_ERROR (as the
// Java name server does); a well-formed but unacceptable value (negative
// broker id, a broker address that would break the Go client's route
// parser, negative queue counts) is Invalid, 29 INVALID_PARAMETER. The
// remark says which field.
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
// refused at registration. With order messages enabled
// (Options.OrderMessageEnable, RocketMQ's orderMessageEnable, off by
// default) a topic with an ORDER_TOPIC_CONFIG value carries it between
// filterServerTable and queueDatas: "orderTopicConf":"broker-a:4;broker-b:2".
//
// # KV configuration
//
// RocketMQ's KVConfigManager: namespace -> key -> value, served by codes
// 100, 101, 102 and 219 (header fields namespace, key, value; a field must
// be present, it may be empty). GET_KV_CONFIG answers the value in response
// header value; an absent key is 22 QUERY_NOT_FOUND "No config item,
// Namespace: N Key: K", an absent namespace in 219 22 "No config item,
// Namespace: N". DELETE_KV_CONFIG answers SUCCESS whether or not the key
// was there, and leaves the namespace (listed {"table":{}}) as Java does.
// Values of ORDER_TOPIC_CONFIG must read as "brokerName:queueNums" items
// separated by ';' (or be empty): anything else is 29 INVALID_PARAMETER,
// because the Go client's producer panics on it. REGISTER_BROKER is
// answered with the ORDER_TOPIC_CONFIG namespace as KVTable
// {"table":{topic:value}} (Java's returnOrderTopicConfigToBroker), no body
// without that namespace.
//
// The actor keeps the configuration in Options.KVConfigPath
// (<data>/namesrv/kvConfig.json), RocketMQ's kvConfig.json shape, written
// indented with sorted keys:
//
//	{
//	  "configTable": {
//	    "ORDER_TOPIC_CONFIG": {
//	      "orders": "broker-a:4;broker-b:4"
//	    }
//	  }
//	}
//
// Every change is written (vfs.WriteFileAtomic: temporary file, fsync,
// rename, fsync of the directory) before the request is answered; a change
// whose write fails is not made and is answered SYSTEM_ERROR. The file is
// read on every start of the actor; one that does not parse stops the
// start with an error naming it and is never overwritten by an empty table.
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

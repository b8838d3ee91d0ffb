// Package grpcgw serves Apache RocketMQ 5's gRPC protocol
// (apache.rocketmq.v2.MessagingService) so that the RocketMQ 5 SDKs (Go v5,
// Node.js, Java) work against wheelmq without a proxy.
//
// # The gateway translates, the broker serves
//
// The gateway holds no messages, touches no store and opens no connection
// to its broker: every RPC is decoded into a call of the broker's API
// (actors/broker) in process, with the verified account and the client's
// own address, and the typed answer is encoded back, so the broker's
// stages, permissions and refusals apply as they do to a remoting client:
//
//	QueryRoute              Broker.Route (every broker's queues, from the name servers)
//	QueryAssignment         Broker.Route, Broker.Group
//	Heartbeat, Telemetry    Broker.Heartbeat (producer group = each published topic; consumer group + subscriptions)
//	SendMessage             Broker.Send, one call per message, all at once (the broker picks the queue)
//	EndTransaction          Broker.EndTransaction
//	ReceiveMessage          Broker.Pop
//	AckMessage              Broker.Ack (every entry in one call)
//	ChangeInvisibleDuration Broker.ChangeInvisible
//	ForwardMessageToDLQ     Broker.ForwardToDeadLetter
//	NotifyClientTermination Broker.Unregister
//	RecallMessage           Broker.Recall
//	UpdateOffset/GetOffset  Broker.CommitOffset / Broker.ConsumerOffset
//	QueryOffset             Broker.QueueBounds, Broker.OffsetAt
//	SyncLiteSubscription    Broker.SyncLiteSubscription (lite.go; a lite
//	                        consumer's receives, acks and changes go to
//	                        Broker.LiteReceive, LiteAck, LiteChangeInvisible)
//
// Errors travel in-band as a Status in a gRPC-OK answer, as the Apache proxy
// does; PullMessage answers NOT_IMPLEMENTED.
//
// # Sessions
//
// Each gRPC client id (the x-mq-client-id header; CLIENT_ID_REQUIRED
// without it) gets one session. The session is the client's
// actors/clients.Conn: its heartbeats register it with the broker in
// process (broker.Heartbeat), so that the broker's CHECK_TRANSACTION_STATE
// (39) for a transaction of that client comes to the session and goes out
// as the Telemetry stream's recover_orphaned_transaction_command. A
// session ends on
// NotifyClientTermination, when its last Telemetry stream closed and no RPC
// came for IdleTimeout (120 s), or on Stop; Stop closes every connection and
// waits for every goroutine the gateway started.
//
// # Listener and auth
//
// One port serves TLS and plaintext h2c, told apart by the first byte (0x16
// opens a TLS handshake; ALPN h2), as the process's TLS mode allows. With an
// ACL (Options.Guard) the authorization header (MQv2-HMAC-SHA1 over
// x-mq-date-time) is verified against the broker's accounts, and the broker
// API's Authorizer decides each call as that account; without one the
// header is ignored.
//
// See docs/grpc.md for the RPC table, the settings values and the limits.
package grpcgw

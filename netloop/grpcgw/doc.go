// Package grpcgw serves Apache RocketMQ 5's gRPC protocol
// (apache.rocketmq.v2.MessagingService) so that the RocketMQ 5 SDKs (Go v5,
// Node.js, Java) work against wheelmq without a proxy.
//
// # The gateway translates, the broker serves
//
// The gateway holds no messages and touches no store. Every RPC becomes
// remoting requests to this broker's own remoting port over loopback
// (netloop/remoting.Client), exactly as a remoting client would send them,
// so the broker's stages, permissions and refusals apply unchanged:
//
//	QueryRoute              GET_TOPIC_CONFIG 351 (+ UPDATE_AND_CREATE_TOPIC 17 when topics auto-create)
//	QueryAssignment         GET_TOPIC_CONFIG 351, GET_SUBSCRIPTIONGROUP_CONFIG 352
//	Heartbeat, Telemetry    HEART_BEAT 34 (producer group = each published topic; consumer group + subscriptions)
//	SendMessage             SEND_MESSAGE 10 (the gateway picks the queue)
//	EndTransaction          END_TRANSACTION 37
//	ReceiveMessage          POP_MESSAGE 200050
//	AckMessage              ACK_MESSAGE 200051 / BATCH_ACK_MESSAGE 200151
//	ChangeInvisibleDuration CHANGE_MESSAGE_INVISIBLETIME 200053
//	ForwardMessageToDLQ     CONSUMER_SEND_MSG_BACK 36 (delayLevel -1), then ACK_MESSAGE
//	NotifyClientTermination UNREGISTER_CLIENT 35
//	RecallMessage           RECALL_MESSAGE 370
//	UpdateOffset/GetOffset  UPDATE_CONSUMER_OFFSET 15 / QUERY_CONSUMER_OFFSET 14
//	QueryOffset             GET_MIN_OFFSET 31, GET_MAX_OFFSET 30, SEARCH_OFFSET_BY_TIMESTAMP 29
//
// Errors travel in-band as a Status in a gRPC-OK answer, as the Apache proxy
// does; PullMessage and SyncLiteSubscription answer NOT_IMPLEMENTED.
//
// # Sessions
//
// Each gRPC client id (the x-mq-client-id header; CLIENT_ID_REQUIRED
// without it) gets one session. The session is the client's
// actors/clients.Conn: its heartbeats register it with the broker in
// process (broker.Heartbeat), so that the broker's CHECK_TRANSACTION_STATE
// (39) for a transaction of that client comes to the session and goes out
// as the Telemetry stream's recover_orphaned_transaction_command. Sends,
// transactions and recalls call the broker API in process (send.go); the
// other RPCs still use the session's internal remoting connection. A session ends on
// NotifyClientTermination, when its last Telemetry stream closed and no RPC
// came for IdleTimeout (120 s), or on Stop; Stop closes every connection and
// waits for every goroutine the gateway started.
//
// # Listener and auth
//
// One port serves TLS and plaintext h2c, told apart by the first byte (0x16
// opens a TLS handshake; ALPN h2), as the process's TLS mode allows. With an
// ACL (Options.Guard) the authorization header (MQv2-HMAC-SHA1 over
// x-mq-date-time) is verified against the broker's accounts and the internal
// requests are signed as that account; without one the header is ignored.
//
// See docs/grpc.md for the RPC table, the settings values and the limits.
package grpcgw

// Package producer is a native RocketMQ producer: the client half of the
// remoting protocol for sending, built on package remoting's pipelined
// connections and package mqclient's shared client instance. It talks to
// wheelmq and to Apache RocketMQ brokers alike.
//
//	p, err := producer.New(producer.WithNameServers("127.0.0.1:9876"), producer.WithGroup("orders-pg"))
//	if err != nil { ... }
//	defer p.Close()
//	res, err := p.Send(ctx, producer.NewMessage("orders", body).WithTag("paid").WithKeys("order-42"))
//	// A timer message, delivered in 90 minutes:
//	res, err = p.Send(ctx, producer.NewMessage("orders", body).WithDelay(90*time.Minute))
//	err = p.SendAsync(ctx, msg, func(res *producer.SendResult, err error) { ... })
//	err = p.SendOneway(ctx, msg)
//	res, err = p.SendBatch(ctx, m1, m2, m3)
//
// # The producer flow
//
//  1. Validate, before anything goes out: topic name rules (storage/meta),
//     not a system topic, a non-empty body of at most MaxMessageSize (4 MiB),
//     well-formed properties within 32767 bytes, numeric timer values; a
//     batch shares one topic and holds no timer message. A refusal is a
//     *ValidationError naming the Rule.
//  2. Find the route: the instance's cache, else the name servers (see
//     mqclient), with TBW102's route standing in for a topic that does not
//     exist yet; only writable queues of master brokers are used.
//  3. Choose a queue: round robin per topic, skipping the broker whose
//     attempt failed last; with WithFaultTolerance, also skipping brokers
//     that were slow (NotAvailableFor) or failed (IsolationDuration). Or a
//     Selector: HashByKey, or any SelectorFunc.
//  4. Send as SEND_MESSAGE_V2 / SEND_BATCH_MESSAGE with ROCKETMQ binary
//     headers (JSON with WithJSONHeaders) on the broker's one pipelined
//     connection: many requests in flight, frames encoded into reused
//     buffers and written together. Bodies from 4 KiB are zlib-compressed.
//     Every message gets a UNIQ_KEY (the SendResult's MsgID).
//  5. Retry: sync and async sends make up to 1+WithRetries attempts (2
//     retries by default) on transport errors, timeouts and RocketMQ's
//     retryable response codes, each attempt within the send timeout (3 s by
//     default); a failed attempt refreshes the topic's route at once. An
//     answer that says the broker is no longer its group's master, or a
//     lost connection, waits (at most a send timeout, using no attempt)
//     for the route to name the group's new master (failover.go).
//
// Async sends hold a permit (65535 and 128 MiB by default) from SendAsync
// until their callback starts: a full producer makes SendAsync wait, not
// queue without bound. Callbacks and retries run on the producer's
// callback workers, never on a connection's reader. Hooks (WithHooks) see
// every attempt before and after.
//
// # Credentials and TLS
//
// WithCredentials signs every request of the producer's client instance
// (GET_ROUTEINFO_BY_TOPIC at the name servers, HEART_BEAT, the sends and
// UNREGISTER_CLIENT at the brokers) with RocketMQ's signature
// (netloop/auth), just before it is encoded; a broker or name server with
// ACL on refuses unsigned requests. WithTLS dials every connection with
// crypto/tls, verifying the server unless the configuration says
// InsecureSkipVerify; the handshake is bounded like the dial. Both are
// part of the client instance: producers that share a client id must share
// them too (New fails with mqclient.ErrConfigConflict otherwise). A signed
// send costs an HMAC-SHA1 over its header values and body and three
// allocations: see docs/benchmarks.md for signed against unsigned, TLS
// against plaintext.
//
// # Cost per send
//
// A send allocates its SendResult and the UNIQ_KEY string it reports, and
// the connection one string for the answer's header; nothing else (the
// caller's Message aside). Its state, its request and its answer callback
// live in an op taken from a pool; the request's header is written straight
// into the connection's output buffer (remoting.ExtWriter); properties are
// kept in order in the Message, timer times as numbers; the answer is
// parsed on loan on the connection's reader (remoting.Client.GoTransient)
// and the op handed to a worker; the in-flight bound is one atomic
// operation while nobody waits; one reading of the clock serves a send.
// BenchmarkSend, BenchmarkSendAsync and BenchmarkSendParallel measure it
// against a broker that answers at once.
//
// Close waits for the sends under way (all bounded by their deadlines) and
// leaves no goroutine behind once the last producer of a client instance
// is closed.
package producer

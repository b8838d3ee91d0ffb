// Package mqclient is the shared, per-process half of a RocketMQ client:
// what Java calls MQClientInstance. Producers (package producer) and, later,
// consumers of one process that use the same client id (IP@instance) share
// one Instance, and with it:
//
//   - one pipelined remoting connection per broker and per name server
//     (remoting.Client: many requests in flight, responses matched by
//     opaque, frames coalesced into one write);
//   - the topic route cache: a lookup asks the name servers in turn, each
//     with its own deadline, starting with the last one that answered; a
//     topic the name servers do not know borrows the route of TBW102 (capped
//     at Config.DefaultTopicQueueNums queues) so that the broker creates it on
//     the first send; routes are refreshed every Config.RouteRefreshInterval
//     and at once when a sender asks (RefreshSoon, after a failed send);
//   - heartbeats (HEART_BEAT, 34) naming the registered producer groups, to
//     every master broker of the cached routes every Config.HeartbeatInterval
//     and to each broker as soon as it is connected.
//
// # Ownership
//
// Acquire returns the Instance of a client id, creating it on first use, and
// Release drops one reference; the last Release stops the instance's two
// goroutines (route refresher, heartbeater), closes every connection and
// waits for all of their goroutines. Every network wait has a deadline:
// dials and name-server requests are bounded by Config's timeouts and by the
// caller's context.
//
// # Credentials and TLS
//
// Config.Credentials sign every request of the instance (remoting's Sign
// hook with netloop/auth.Sign) and Config.TLS makes every connection TLS;
// both are part of what an instance is shared by, so one client id never
// signs for two identities.
//
// # Publish routes
//
// PublishRoute turns a TopicRouteData into the queues a producer may write:
// queue datas sorted by broker name, only those with the WRITE permission,
// only brokers whose address table has a master (id 0), queue ids
// 0..writeQueueNums-1; or the queues of orderTopicConf when it is set.
package mqclient

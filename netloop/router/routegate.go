package router

// The answer to a request that made topics waits for their routes.
//
// For sends this is the broker API's rule (actors/broker sendrules.go,
// routeGate): a send to a topic the broker does not have yet auto-creates it (from
// TBW102, or a %RETRY%/%DLQ% topic): the topics stage persists and
// publishes it, then the send is stored. Its producer, or a consumer
// started right after its SEND_OK, then asks a name server for the topic's
// route: RocketMQ registers the new topic oneway, after answering, so that
// question can come too early ("route info not found"). wheelmq stores the
// message and, at the same time, has the registrar wait until every name
// server acknowledged a registration that carries the topic
// (pipeline.AwaitRoutes: bounded by Config.RouteWait, never failing the
// send); the SEND_OK goes out once both are done. Every send that missed
// the topic in the published table gets such a gate, so sends racing to
// create the same topic all wait for the same registration. A send to a
// topic already in the table (the hot path of fastsend.go, and the general
// path) has no gate and is not held. A refused or failed send is answered
// at once: nothing of it was stored.

import (
	"github.com/wheelmq/wheelmq/netloop"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// answerOnceRouted answers an UPDATE_AND_CREATE_TOPIC (or any request that
// made topics) with SUCCESS once the name servers have their routes.
func (r *Router) answerOnceRouted(c *netloop.Conn, cmd *remoting.Command, topics ...string) {
	r.p.AwaitRoutes(topics, func() { r.reply(c, cmd, remoting.Success, "") })
}

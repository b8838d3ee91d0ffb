package router

// The answer to a send that made its topic waits for the topic's route.
//
// A send to a topic the broker does not have yet auto-creates it (from
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
	"sync"
)

// routeGate holds a send's answer until its topic's route is registered.
// Its methods are safe from any goroutine: open runs on the registrar's,
// hold on the commitlog writer's.
type routeGate struct {
	mu     sync.Mutex
	routed bool   // guarded by mu
	held   func() // guarded by mu: the answer, when it came first
}

// awaitRoute returns the gate of a send that made (or found just made)
// topic: it opens once the name servers have the route.
func (r *Router) awaitRoute(topic string) *routeGate {
	g := &routeGate{}
	r.p.AwaitRoutes([]string{topic}, g.open)
	return g
}

// open marks the route registered and sends the answer held, if any.
func (g *routeGate) open() {
	g.mu.Lock()
	g.routed = true
	answer := g.held
	g.held = nil
	g.mu.Unlock()
	if answer != nil {
		answer()
	}
}

// hold keeps answer for open and reports true while the route is not
// registered yet; once it is, it reports false and the caller answers.
func (g *routeGate) hold(answer func()) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.routed {
		return false
	}
	g.held = answer
	return true
}

package broker

// Topic auto-creation on a send, and the answer held until a created
// topic's route is registered: one rule for every front door.

import (
	"sync"
)

// routeGate holds a send's answer until its topic's route is registered:
// the send made the topic, and the client's next route lookup must find
// it. Its methods are safe from any goroutine: open runs on the
// registrar's, hold on the commitlog writer's.
type routeGate struct {
	mu     sync.Mutex
	routed bool   // guarded by mu
	held   func() // guarded by mu: the answer, when it came first
}

// awaitRoute returns the gate of a send that made (or found just made)
// topic: it opens once the name servers have the route.
func (b *Broker) awaitRoute(topic string) *routeGate {
	g := &routeGate{}
	b.p.AwaitRoutes([]string{topic}, g.open)
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

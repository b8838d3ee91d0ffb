package broker

// Clients for the operator: who is connected through every front door
// (remoting clients and gRPC sessions alike register with the clients
// stage). How far each group is behind is ConsumeStats (consumestats.go).

import (
	"slices"

	"github.com/wheelmq/wheelmq/actors/clients"
)

// ClientInfo is one registered client, with the front door it came
// through.
type ClientInfo struct {
	clients.ClientInfo
	// Protocol is Remoting or GRPC.
	Protocol Protocol
}

// IsSessionConnID tells a gRPC session's clients.Conn id (NewConnID) from
// a socket's.
func IsSessionConnID(id uint64) bool { return id&(1<<62) != 0 }

// Clients answers every registered client whose groups the caller may
// see: a client is listed with the producer and consumer groups its
// account has SUB on (all of them for an admin, or without ACL), and left
// out when none. done runs on the clients stage's goroutine.
func (b *Broker) Clients(c Caller, done func([]ClientInfo, *Error)) {
	b.clients.st.Send(&clients.ListClients{FailFunc: failed("list clients", func(e *Error) { done(nil, e) }),
		Reply: func(all []clients.ClientInfo) {
			may := func(g string) bool { return b.authorize(c, Need{Kind: KindGroup, Name: g, Perm: Sub}) == nil }
			out := make([]ClientInfo, 0, len(all))
			for _, ci := range all {
				ci.ProducerGroups = slices.DeleteFunc(ci.ProducerGroups, func(g string) bool { return !may(g) })
				ci.Consumers = slices.DeleteFunc(ci.Consumers, func(cd clients.ConsumerInfo) bool { return !may(cd.Group) })
				if len(ci.ProducerGroups) == 0 && len(ci.Consumers) == 0 {
					continue
				}
				p := Remoting
				if IsSessionConnID(ci.ConnID) {
					p = GRPC
				}
				out = append(out, ClientInfo{ClientInfo: ci, Protocol: p})
			}
			done(out, nil)
		}})
}

package clients

import (
	"slices"
	"sort"
	"time"

	"github.com/wheelmq/wheelmq/actors/stage"
)

// ListClients answers every registered client (producers and consumers of
// every front door), sorted by client id; the slices are copies.
type ListClients struct {
	Reply func([]ClientInfo)
	stage.FailFunc
}

// ClientInfo is one registered client as its latest heartbeat made it.
type ClientInfo struct {
	ID       string
	Addr     string
	Language string
	Version  int32
	// ConnID is the id of the connection it registered through (a gRPC
	// session's has bit 62 set: see actors/broker NewConnID).
	ConnID   uint64
	LastSeen time.Time
	// ProducerGroups are the producer groups it registered, sorted.
	ProducerGroups []string
	// Consumers are its consumer groups, sorted by group.
	Consumers []ConsumerInfo
}

// ConsumerInfo is one consumer group of a client.
type ConsumerInfo struct {
	Group        string
	ConsumeType  string // CONSUME_ACTIVELY (pull), CONSUME_PASSIVELY (push), CONSUME_POP
	MessageModel string
	Topics       []string // subscribed, sorted
}

// listClients serves ListClients.
func (m *Manager) listClients(q *ListClients) {
	out := make([]ClientInfo, 0, len(m.clients))
	for id, c := range m.clients {
		ci := ClientInfo{ID: id, Addr: c.addr, Language: c.language, Version: c.version, ConnID: c.conn.ID(), LastSeen: c.lastSeen}
		for g := range c.pgroups {
			ci.ProducerGroups = append(ci.ProducerGroups, g)
		}
		slices.Sort(ci.ProducerGroups)
		for g, cd := range c.groups {
			info := ConsumerInfo{Group: g, ConsumeType: cd.ConsumeType, MessageModel: cd.MessageModel}
			for _, sd := range cd.SubscriptionDataSet {
				info.Topics = append(info.Topics, sd.Topic)
			}
			slices.Sort(info.Topics)
			ci.Consumers = append(ci.Consumers, info)
		}
		sort.Slice(ci.Consumers, func(i, j int) bool { return ci.Consumers[i].Group < ci.Consumers[j].Group })
		out = append(out, ci)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	q.Reply(out)
}

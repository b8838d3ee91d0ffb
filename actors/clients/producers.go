package clients

import (
	"sort"

	"github.com/wheelmq/wheelmq/actors/stage"
)

// SendToProducer sends Request (a broker-initiated request such as
// CheckTransaction) oneway to one live client of producer group
// Group, chosen round-robin among the clients whose heartbeat names the
// group, skipping connections that refuse the write. Reply (may be nil)
// gets the client id it went to, or "" when no client of the group could
// take it. The stage sets the request's opaque and oneway flag.
type SendToProducer struct {
	Group   string
	Request Push
	Reply   func(clientID string)
	stage.FailFunc
}

// producers lists the client ids of a producer group, sorted.
func (m *Manager) producers(group string) []string {
	var ids []string
	for id, c := range m.clients {
		if c.isProducerOf(group) {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids
}

func (m *Manager) sendToProducer(s *SendToProducer) {
	ids := m.producers(s.Group)
	if len(ids) == 0 {
		delete(m.rr, s.Group)
	}
	sent := ""
	for i := range ids {
		pos := (m.rr[s.Group] + i) % len(ids)
		id := ids[pos]
		m.opaque++
		if err := m.clients[id].conn.Send(Request{Opaque: m.opaque, Oneway: true, Push: s.Request}); err != nil {
			m.opts.Logger.Debug().Err(err).Str("client", id).Str("group", s.Group).Int32("code", s.Request.Code()).
				Msg("request to producer not delivered; trying the next one")
			continue
		}
		m.rr[s.Group] = pos + 1
		sent = id
		break
	}
	if sent == "" {
		m.opts.Logger.Debug().Str("group", s.Group).Int32("code", s.Request.Code()).Int("producers", len(ids)).
			Msg("no live producer of the group to send to")
	}
	if s.Reply != nil {
		s.Reply(sent)
	}
}

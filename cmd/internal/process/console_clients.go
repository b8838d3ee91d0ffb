package process

// The console's clients page: every registered client of every front door
// (remoting connections and gRPC sessions) and the lag of each online
// consumer group, POP deliveries in flight apart, through the broker API.

import (
	"context"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/wheelmq/wheelmq/actors/broker"
	"github.com/wheelmq/wheelmq/cmd/internal/console"
)

// Connections lists the clients the account may see and its online
// consumer groups' progress.
func (cb *consoleBackend) Connections(ctx context.Context, c console.Credentials) (console.Connections, error) {
	var out console.Connections
	core, err := cb.core()
	if err != nil {
		return out, err
	}
	all, err := await(ctx, func(done func([]broker.ClientInfo, *broker.Error)) { core.Clients(cb.caller(c), done) })
	if err != nil {
		return out, err
	}
	groups := map[string]*console.GroupLag{}
	protos := map[string]map[string]bool{}
	for _, ci := range all {
		cc := console.ClientConn{ID: ci.ID, Protocol: ci.Protocol.String(), Addr: ci.Addr, Language: ci.Language,
			Version: int(ci.Version), Producers: ci.ProducerGroups, LastSeen: ci.LastSeen}
		for _, cd := range ci.Consumers {
			cc.Consumers = append(cc.Consumers, cd.Group)
			g := groups[cd.Group]
			if g == nil {
				g = &console.GroupLag{Group: cd.Group, ConsumeType: consumeTypeName(cd.ConsumeType)}
				groups[cd.Group] = g
				protos[cd.Group] = map[string]bool{}
			}
			g.Online++
			protos[cd.Group][cc.Protocol] = true
		}
		out.Clients = append(out.Clients, cc)
	}
	for _, name := range slices.Sorted(maps.Keys(groups)) {
		g := groups[name]
		g.Protocols = strings.Join(slices.Sorted(maps.Keys(protos[name])), ", ")
		gp, err := await(ctx, func(done func(*broker.ConsumeStats, *broker.Error)) {
			core.ConsumeStats(cb.caller(c), broker.ConsumeStatsRequest{Group: name, Pop: true}, done)
		})
		if err != nil {
			return out, err
		}
		g.Topics = topicLags(gp)
		for _, t := range g.Topics {
			g.Lag += t.Lag
			g.InFlight += t.InFlight
			g.Retrying += t.Retrying
		}
		out.Groups = append(out.Groups, *g)
	}
	return out, nil
}

// topicLags sums a group's queues by topic.
func topicLags(gp *broker.ConsumeStats) []console.TopicLag {
	var out []console.TopicLag
	for _, q := range gp.Queues {
		if len(out) == 0 || out[len(out)-1].Topic != q.Topic {
			out = append(out, console.TopicLag{Topic: q.Topic})
		}
		t := &out[len(out)-1]
		t.Max += q.BrokerOffset
		t.Consumed += q.ConsumerOffset
		t.Lag += q.Lag
		t.InFlight += int64(q.InFlight)
		t.Retrying += int64(q.Retrying)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Topic < out[j].Topic })
	return out
}

// consumeTypeName shortens RocketMQ's consume types.
func consumeTypeName(t string) string {
	switch t {
	case "CONSUME_PASSIVELY":
		return "PUSH"
	case "CONSUME_ACTIVELY":
		return "PULL"
	case "CONSUME_POP":
		return "POP"
	}
	return t
}

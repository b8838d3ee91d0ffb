package process

// The console's group detail and offset reset, through the broker API's
// group administration (actors/broker/groupprogress.go): the API's
// Authorizer decides each call as it decides the remoting requests'.

import (
	"context"
	"slices"
	"sort"
	"time"

	"github.com/wheelmq/wheelmq/actors/broker"
	"github.com/wheelmq/wheelmq/cmd/internal/console"
	"github.com/wheelmq/wheelmq/netloop/auth"
	"github.com/wheelmq/wheelmq/storage/meta"
)

func (cb *consoleBackend) GroupDetail(ctx context.Context, c console.Credentials, group string) (console.GroupDetail, error) {
	d := console.GroupDetail{Group: console.Group{Name: group}}
	core, err := cb.core()
	if err != nil {
		return d, err
	}
	if g, ok := cb.n.broker.pipe.Groups().Get(group); ok && cb.mayRead(c, auth.GroupNeed)(group) {
		d.Group = console.Group{Name: group, ConsumeEnable: g.ConsumeEnable, Broadcast: g.ConsumeBroadcastEnable,
			Model: cb.n.broker.pipe.Subscriptions().MessageModel(group), Orderly: g.ConsumeMessageOrderly,
			RetryMax: int(g.RetryMaxTimes), System: meta.IsSystemGroup(group)}
	}
	caller := cb.caller(c)
	conns, err := await(ctx, func(done func(*broker.Connections, *broker.Error)) { core.ConsumerConnections(caller, group, done) })
	if err != nil {
		return d, err
	}
	if conns.Online {
		cc := conns.Body
		d.ConsumeType, d.Model = cc.ConsumeType, cc.MessageModel
		for t := range cc.SubscriptionTable {
			d.Topics = append(d.Topics, t)
		}
		slices.Sort(d.Topics)
		for _, cl := range cc.ConnectionSet {
			d.Clients = append(d.Clients, console.Client{ID: cl.ClientID, Addr: cl.ClientAddr, Language: cl.Language, Version: int(cl.Version)})
		}
		sort.Slice(d.Clients, func(i, j int) bool { return d.Clients[i].ID < d.Clients[j].ID })
	}
	st, err := await(ctx, func(done func(*broker.ConsumeStats, *broker.Error)) {
		core.ConsumeStats(caller, broker.ConsumeStatsRequest{Group: group}, done)
	})
	if err != nil {
		return d, err
	}
	d.Tps = st.TPS
	name := cb.n.broker.cfg.BrokerName
	for _, q := range st.Queues { // sorted by topic and queue
		d.Queues = append(d.Queues, console.QueueLag{Topic: q.Topic, Broker: name, ID: int(q.QueueID),
			BrokerOffset: q.BrokerOffset, ConsumerOffset: q.ConsumerOffset, Lag: q.Lag,
			LastTimestampMs: q.LastTimestamp})
	}
	return d, nil
}

// ResetGroup moves the group's offsets of topic to the first message
// stored at or after at (admin); the API tells the group's consumers.
func (cb *consoleBackend) ResetGroup(ctx context.Context, c console.Credentials, group, topic string, at time.Time) error {
	core, err := cb.core()
	if err != nil {
		return err
	}
	req := broker.ResetRequest{Group: group, Topic: topic, Timestamp: at.UnixMilli(), QueueID: -1, Offset: -1}
	_, err = await(ctx, func(done func(map[int32]int64, *broker.Error)) { core.ResetOffsets(cb.caller(c), req, done) })
	return err
}

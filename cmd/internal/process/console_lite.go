package process

// The console's lite topics page: the broker API's typed lite snapshot
// (actors/broker/liteview.go).

import (
	"context"

	"github.com/wheelmq/wheelmq/cmd/internal/console"
)

// LiteTopics is the lite state of the LITE topics the account may read.
func (cb *consoleBackend) LiteTopics(_ context.Context, c console.Credentials, top int) ([]console.LiteParent, error) {
	core, err := cb.core()
	if err != nil {
		return nil, err
	}
	var out []console.LiteParent
	for _, p := range core.LiteView(cb.caller(c), top, 0) {
		cp := console.LiteParent{Topic: p.Topic, Resident: p.Resident, Holding: p.Holding, Subscribed: p.Subscribed,
			Messages: p.Messages, InFlight: p.InFlight, Complete: p.Complete, Scanned: p.Scanned}
		for _, g := range p.Groups {
			cp.Groups = append(cp.Groups, console.LiteGroup{Group: g.Group, Clients: g.Clients, Subscriptions: g.Subscriptions,
				Backlog: g.Backlog, InFlight: g.InFlight})
		}
		for _, t := range p.Top {
			cp.Top = append(cp.Top, console.LiteTopic{Lite: t.Lite, Messages: t.Messages, InFlight: t.InFlight,
				Subscribers: t.Subscribers, LastWrite: t.LastWrite})
		}
		out = append(out, cp)
	}
	return out, nil
}

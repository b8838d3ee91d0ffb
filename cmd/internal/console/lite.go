package console

import (
	"context"
	"net/http"
	"time"
)

// LiteBackend is what the console knows of lite topics (RocketMQ 5.5;
// docs/lite.md): the broker API's typed lite snapshot (actors/broker
// LiteView).
type LiteBackend interface {
	// LiteTopics is the lite state of the LITE topics the account may
	// read, by name, with at most top lite topics each in Top.
	LiteTopics(ctx context.Context, c Credentials, top int) ([]LiteParent, error)
}

// LiteParent is one LITE parent topic.
type LiteParent struct {
	Topic string
	// Resident counts its lite topics in memory (holding messages or
	// subscribed to); Holding those holding messages; Subscribed those
	// with a subscriber; Messages the messages held; InFlight the
	// deliveries in flight.
	Resident, Holding, Subscribed, Messages, InFlight int
	Groups                                            []LiteGroup
	Top                                               []LiteTopic
	// Complete is false when the broker's walk was cut short: the counts
	// but Resident are of the lite topics walked (Scanned).
	Complete bool
	Scanned  int
}

// LiteGroup is one consumer group of a LITE parent.
type LiteGroup struct {
	Group                  string
	Clients, Subscriptions int
	Backlog                int64
	InFlight               int
}

// LiteTopic is one lite topic.
type LiteTopic struct {
	Lite                            string
	Messages, InFlight, Subscribers int
	LastWrite                       time.Time
}

// liteTop is how many lite topics the page lists per parent.
const liteTop = 20

func (c *Console) litePage(ctx context.Context, _ *http.Request, ss session, v *view) error {
	v.Title, v.Page = "Lite topics", "lite"
	ps, err := c.b.LiteTopics(ctx, ss.creds, liteTop)
	v.Data = ps
	return err
}

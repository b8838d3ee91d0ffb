package registrar

import (
	"context"
	"fmt"

	"github.com/wheelmq/wheelmq/actors/namesrv"
	"github.com/wheelmq/wheelmq/storage/meta"
)

// Calls are the stage's calls to name servers, in typed form: the stage
// says what to register and with whom; an implementation writes it in a
// protocol (netloop/nscalls: RocketMQ remoting, signed with the broker's
// credentials, over TLS when configured). Its methods are called from
// the stage's goroutine and its call goroutines at once.
type Calls interface {
	// Register builds the REGISTER_BROKER request of reg once: the stage
	// sends it to every name server (Link.Call) until the registration
	// changes. An error means reg cannot be registered (an invalid broker
	// info or topic config).
	Register(reg Registration) (Prepared, error)
	// Unregister builds the UNREGISTER_BROKER request of info.
	Unregister(info namesrv.BrokerInfo) Prepared
	// Dial opens a connection to the name server at addr within ctx.
	Dial(ctx context.Context, addr string) (Link, error)
}

// Registration is what REGISTER_BROKER says: who the broker is, its topic
// table and the table's version.
type Registration struct {
	Info    namesrv.BrokerInfo
	Topics  map[string]meta.TopicConfig
	Version namesrv.DataVersion
}

// Prepared is a request Calls built, opaque to the stage: sent as it is,
// to as many name servers as need it, with Link.Call.
type Prepared interface{}

// Link is an open connection to one name server.
type Link interface {
	// Call sends a copy of req and waits within ctx for the name server's
	// answer: nil once it acknowledged the request (SUCCESS); an error
	// for a refusal or a broken connection.
	Call(ctx context.Context, req Prepared) error
	// Done is closed once the connection closed.
	Done() <-chan struct{}
	// Err is why the connection closed (nil while it is open).
	Err() error
	// Close closes the connection.
	Close() error
}

// Refused is Link.Call's error for a request the name server answered
// with a code other than SUCCESS: the connection stays usable.
type Refused struct {
	Code   int32
	Remark string
}

// Error implements error.
func (e *Refused) Error() string { return fmt.Sprintf("answered code %d: %s", e.Code, e.Remark) }

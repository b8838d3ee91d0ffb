package broker

// Kind is the kind of resource a call acts on.
type Kind uint8

// The kinds of resource.
const (
	// KindBroker is the broker as a whole (its configuration, every
	// topic, every group): admin only.
	KindBroker Kind = iota
	// KindTopic is one topic.
	KindTopic
	// KindGroup is one consumer or producer group.
	KindGroup
)

// Perm is what a call does to its resource.
type Perm uint8

// The permissions, as RocketMQ's ACL names them.
const (
	// Sub reads: consume, view.
	Sub Perm = iota + 1
	// Pub writes messages.
	Pub
	// Admin changes configuration.
	Admin
)

// Need is what one call needs of its caller's account.
type Need struct {
	Kind Kind
	Name string // the topic or group ("" for KindBroker)
	Perm Perm
}

// Authorizer decides whether a caller's account may do what a call needs:
// nil when it may, else the Forbidden *Error the caller gets. The process
// wires the ACL into it (SetAuthorizer); without one every call is allowed.
type Authorizer interface {
	Authorize(c Caller, need Need) *Error
}

// SetAuthorizer sets the ACL every call is checked against (before Serve).
func (b *Broker) SetAuthorizer(a Authorizer) { b.authz = a }

// authorize checks c against every need, in order; nil when all are met.
// A caller whose codec already checked the request (Caller.Checked) is not
// checked again.
func (b *Broker) authorize(c Caller, needs ...Need) *Error {
	if b.authz == nil || c.Checked {
		return nil
	}
	for _, n := range needs {
		if err := b.authz.Authorize(c, n); err != nil {
			return err
		}
	}
	return nil
}

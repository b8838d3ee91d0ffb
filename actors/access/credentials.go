package access

import "fmt"

// Credentials are an account's keys as plain data (RocketMQ's
// SessionCredentials): what the process signs its own requests with, held
// by the stages (the registrar's, the ACL file's lock-out check) without
// the network layer. netloop/auth.Credentials is the same struct with the
// signing methods: convert with auth.Credentials(c). Printing them (%v,
// %s, %#v, %+v) shows the access key and never the secret.
type Credentials struct {
	AccessKey     string
	SecretKey     string
	SecurityToken string // optional; sent and signed when not empty
}

// IsZero reports credentials that sign nothing: no access key or no
// secret key.
func (c Credentials) IsZero() bool { return c.AccessKey == "" || c.SecretKey == "" }

// String shows the access key only.
func (c Credentials) String() string {
	if c.IsZero() {
		return "no credentials"
	}
	return fmt.Sprintf("access key %q (secret hidden)", c.AccessKey)
}

// GoString is String, for %#v.
func (c Credentials) GoString() string { return c.String() }

// Format prints String for every verb, so that no verb (%+v included)
// shows the secret.
func (c Credentials) Format(f fmt.State, _ rune) { _, _ = fmt.Fprint(f, c.String()) }

package auth

import "github.com/wheelmq/wheelmq/netloop/remoting"

// Credentials are an identity a process signs its own requests with (a
// broker's REGISTER_BROKER, for instance).
type Credentials struct {
	AccessKey, SecretKey string
}

// Empty reports credentials that sign nothing (either key empty).
func (c Credentials) Empty() bool { return c.AccessKey == "" || c.SecretKey == "" }

// Sign signs cmd with c; empty credentials leave it unsigned.
func (c Credentials) Sign(cmd *remoting.Command) {
	if !c.Empty() {
		Sign(cmd, c.AccessKey, c.SecretKey, "")
	}
}

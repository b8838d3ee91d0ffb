package auth

import "github.com/wheelmq/wheelmq/netloop/remoting"

// Sign signs cmd with c (Sign of the package); credentials that are zero
// leave it unsigned.
func (c Credentials) Sign(cmd *remoting.Command) {
	if !c.IsZero() {
		Sign(cmd, c.AccessKey, c.SecretKey, c.SecurityToken)
	}
}

// Package nscalls is the registrar's name-server calls in RocketMQ's
// remoting protocol (actors/registrar.Calls): REGISTER_BROKER and
// UNREGISTER_BROKER built by actors/namesrv's encoders, signed with the
// broker's credentials, sent over a remoting.Client per name server
// (TLS when configured). The registrar stage says what to register; this
// package writes it on the wire.
package nscalls

import (
	"context"
	"crypto/tls"
	"fmt"

	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/namesrv"
	"github.com/wheelmq/wheelmq/actors/registrar"
	"github.com/wheelmq/wheelmq/netloop/auth"
	"github.com/wheelmq/wheelmq/netloop/nsrvcodec"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// Options configures the calls.
type Options struct {
	// TLS, when not nil, is the TLS configuration of the connections to
	// the name servers (nil: plaintext).
	TLS *tls.Config
	// Credentials sign REGISTER_BROKER and UNREGISTER_BROKER, for name
	// servers with an ACL (empty: unsigned).
	Credentials auth.Credentials
	// Logger is the connections' logger.
	Logger zerolog.Logger
}

// Calls implements registrar.Calls over remoting.
type Calls struct{ opts Options }

var _ registrar.Calls = (*Calls)(nil)

// New returns the calls of opts.
func New(opts Options) *Calls { return &Calls{opts: opts} }

// Register implements registrar.Calls: the request is signed once, and
// every name server's call sends a copy of it.
func (c *Calls) Register(reg registrar.Registration) (registrar.Prepared, error) {
	req, err := nsrvcodec.NewRegisterRequest(reg.Info, reg.Topics, reg.Version)
	if err != nil {
		return nil, err
	}
	c.opts.Credentials.Sign(req)
	return req, nil
}

// Unregister implements registrar.Calls.
func (c *Calls) Unregister(info namesrv.BrokerInfo) registrar.Prepared {
	req := nsrvcodec.NewUnregisterRequest(info)
	c.opts.Credentials.Sign(req)
	return req
}

// Dial implements registrar.Calls.
func (c *Calls) Dial(ctx context.Context, addr string) (registrar.Link, error) {
	cl, err := remoting.Dial(ctx, addr, remoting.ClientOptions{Logger: c.opts.Logger, TLS: c.opts.TLS})
	if err != nil {
		return nil, err
	}
	return link{cl}, nil
}

// link is a name-server connection as a registrar.Link.
type link struct{ *remoting.Client }

// Call implements registrar.Link: a copy of req (a request Calls built)
// goes out, so that the copies sent to many name servers at once share
// nothing the client writes (the opaque).
func (l link) Call(ctx context.Context, req registrar.Prepared) error {
	cmd, ok := req.(*remoting.Command)
	if !ok {
		return fmt.Errorf("name server call: a %T is not a request of nscalls", req)
	}
	cp := *cmd
	resp, err := l.Invoke(ctx, &cp)
	if err != nil {
		return err
	}
	if resp.Code != remoting.Success {
		return &registrar.Refused{Code: resp.Code, Remark: resp.Remark}
	}
	return nil
}

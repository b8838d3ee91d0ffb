package registrar

import (
	"context"

	"github.com/wheelmq/wheelmq/actors/namesrv"
	"github.com/wheelmq/wheelmq/netloop/nsrvcodec"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// remotingCalls are the tests' Calls: remoting, unsigned, as
// netloop/nscalls's (which imports this package, so a test here cannot
// use it); the process tests run nscalls's.
type remotingCalls struct{}

func (remotingCalls) Register(reg Registration) (Prepared, error) {
	return nsrvcodec.NewRegisterRequest(reg.Info, reg.Topics, reg.Version)
}

func (remotingCalls) Unregister(info namesrv.BrokerInfo) Prepared {
	return nsrvcodec.NewUnregisterRequest(info)
}

func (remotingCalls) Dial(ctx context.Context, addr string) (Link, error) {
	c, err := remoting.Dial(ctx, addr, remoting.ClientOptions{})
	if err != nil {
		return nil, err
	}
	return remotingLink{c}, nil
}

type remotingLink struct{ *remoting.Client }

func (l remotingLink) Call(ctx context.Context, req Prepared) error {
	cp := *req.(*remoting.Command)
	resp, err := l.Invoke(ctx, &cp)
	if err != nil {
		return err
	}
	if resp.Code != remoting.Success {
		return &Refused{Code: resp.Code, Remark: resp.Remark}
	}
	return nil
}

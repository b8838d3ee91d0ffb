package nscalls

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/namesrv"
	"github.com/wheelmq/wheelmq/actors/registrar"
	"github.com/wheelmq/wheelmq/netloop"
	"github.com/wheelmq/wheelmq/netloop/auth"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/meta"
)

// fakeNamesrv answers REGISTER_BROKER with SUCCESS and everything else
// with SYSTEM_ERROR, and records what it got.
type fakeNamesrv struct {
	mu  sync.Mutex
	got []*remoting.Command
}

func (f *fakeNamesrv) OnOpen(*netloop.Conn)         {}
func (f *fakeNamesrv) OnClose(*netloop.Conn, error) {}
func (f *fakeNamesrv) OnCommand(c *netloop.Conn, cmd *remoting.Command) {
	f.mu.Lock()
	f.got = append(f.got, cmd)
	f.mu.Unlock()
	code, remark := int32(remoting.Success), ""
	if cmd.Code != remoting.RegisterBroker {
		code, remark = remoting.SystemError, "not today"
	}
	_ = c.Send(remoting.NewResponse(cmd, code, remark))
}

// TestCallsSignAndRefuse: a registration is signed once with the
// broker's credentials and every copy sent verifies; a refusal is a
// *registrar.Refused and keeps the connection; Done closes with the
// server.
func TestCallsSignAndRefuse(t *testing.T) {
	f := &fakeNamesrv{}
	srv := netloop.NewServer(netloop.Config{Name: "namesrv", Addr: "127.0.0.1:0", NumEventLoop: 1}, f)
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			_ = srv.Stop(context.Background())
		}
	}()
	const secret = "broker-secret-1234"
	calls := New(Options{Credentials: auth.Credentials{AccessKey: "broker-ak", SecretKey: secret}, Logger: zerolog.Nop()})
	info := namesrv.BrokerInfo{Cluster: "DefaultCluster", BrokerName: "broker-a", BrokerAddr: "127.0.0.1:10911"}
	if _, err := calls.Register(registrar.Registration{Info: namesrv.BrokerInfo{}}); err == nil {
		t.Fatal("a registration without a broker name was built")
	}
	req, err := calls.Register(registrar.Registration{Info: info,
		Topics:  map[string]meta.TopicConfig{"T1": {TopicName: "T1", ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6}},
		Version: namesrv.DataVersion{Counter: 3}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	l, err := calls.Dial(ctx, srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	for range 2 {
		if err := l.Call(ctx, req); err != nil {
			t.Fatalf("register: %v", err)
		}
	}
	err = l.Call(ctx, calls.Unregister(info))
	var refused *registrar.Refused
	if !errors.As(err, &refused) || refused.Code != remoting.SystemError || refused.Remark != "not today" {
		t.Fatalf("refused unregister: %v, want a registrar.Refused of code 1", err)
	}
	if l.Err() != nil {
		t.Fatalf("a refusal closed the connection: %v", l.Err())
	}
	f.mu.Lock()
	got := append([]*remoting.Command(nil), f.got...)
	f.mu.Unlock()
	if len(got) != 3 || got[0].Opaque == got[1].Opaque {
		t.Fatalf("name server got %d requests (opaques of the copies %d, %d)", len(got), got[0].Opaque, got[1].Opaque)
	}
	for i, cmd := range got {
		if cmd.Field(auth.FieldAccessKey) != "broker-ak" || !auth.Verify(cmd, secret) {
			t.Errorf("request %d (code %d) not signed by broker-ak: %v", i, cmd.Code, cmd.ExtFields)
		}
	}
	if got[0].Code != remoting.RegisterBroker || got[0].Field("brokerName") != "broker-a" || got[2].Code != remoting.UnregisterBroker {
		t.Errorf("codes %d, %d, %d", got[0].Code, got[1].Code, got[2].Code)
	}
	_ = srv.Stop(context.Background())
	stopped = true
	select {
	case <-l.Done():
	case <-ctx.Done():
		t.Fatal("the link did not see its name server go")
	}
}

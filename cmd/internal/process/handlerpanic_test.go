package process_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/pipeline"
	"github.com/wheelmq/wheelmq/cmd/internal/process"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/netloop"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// A panic in a remoting handler of a running node is answered as an error
// while the broker serves on. The panic is the node's own log-level switch
// (pipeline.Config.SetLogLevel, set by Go code only: this test makes it
// panic), reached by UPDATE_BROKER_CONFIG on a gnet event loop.
func TestHandlerPanicServesOn(t *testing.T) {
	t.Parallel()
	n := processtest.Start(t, processtest.Options{Mutate: func(c *pipeline.Config) {
		c.SetLogLevel = func(l zerolog.Level) { panic("log level switch exploded at " + l.String()) }
	}})
	topic := processtest.Unique("panic")
	processtest.CreateTopic(t, n, topic, 2)
	p := processtest.Producer(t, n.NamesrvAddr())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	send := func(what string) {
		t.Helper()
		res, err := p.SendSync(ctx, primitive.NewMessage(topic, []byte(what)))
		if err != nil || res.Status != primitive.SendOK {
			t.Fatalf("send %s: %v %v", what, res, err)
		}
	}
	send("before")

	c, err := remoting.Dial(ctx, n.BrokerAddr(), remoting.ClientOptions{})
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer c.Close()
	resp, err := c.Invoke(ctx, remoting.NewRequest(remoting.UpdateBrokerConfig, nil, []byte("log-level=debug\n")))
	if err != nil {
		t.Fatalf("UPDATE_BROKER_CONFIG: %v", err)
	}
	if resp.Code != remoting.SystemError || !strings.Contains(resp.Remark, "INTERNAL_ERROR") {
		t.Fatalf("UPDATE_BROKER_CONFIG whose handler panicked: code %d %q, want SYSTEM_ERROR [INTERNAL_ERROR]", resp.Code, resp.Remark)
	}
	// The same connection serves on, and so does the settings lock the
	// panic unwound through.
	resp, err = c.Invoke(ctx, remoting.NewRequest(remoting.UpdateBrokerConfig, nil, []byte("max-conn-requests=4000\n")))
	if err != nil || resp.Code != remoting.Success {
		t.Fatalf("UPDATE_BROKER_CONFIG after the panic on the same connection: %v %+v", err, resp)
	}
	kind := "25" // UPDATE_BROKER_CONFIG
	if got := gatherPanics(t, n.Registry().Gather, "remoting", kind); got != 1 {
		t.Fatalf("wheelmq_handler_panics_total{protocol=remoting,kind=%s} = %v, want 1", kind, got)
	}
	send("after")
}

// The same over TLS: the request is served on the connection's own
// goroutine, not an event loop, and the connection serves on.
func TestHandlerPanicServesOnTLS(t *testing.T) {
	t.Parallel()
	n := processtest.Start(t, processtest.Options{ClientTLS: insecure(),
		Mutate: func(c *pipeline.Config) {
			c.SetLogLevel = func(zerolog.Level) { panic("log level switch exploded") }
		},
		MutateNode: func(c *process.Config) { c.TLS = process.TLSConfig{Mode: netloop.TLSEnforcing, Namesrv: true} },
	})
	topic := processtest.Unique("panictls")
	c, err := dialTLS(t, n.BrokerAddr(), insecure())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := c.Invoke(ctx, remoting.NewRequest(remoting.UpdateBrokerConfig, nil, []byte("log-level=info\n")))
	if err != nil || resp.Code != remoting.SystemError || !strings.Contains(resp.Remark, "INTERNAL_ERROR") {
		t.Fatalf("UPDATE_BROKER_CONFIG whose handler panicked, over TLS: %v %+v, want SYSTEM_ERROR [INTERNAL_ERROR]", err, resp)
	}
	resp, err = c.Invoke(ctx, remoting.NewRequest(remoting.UpdateAndCreateTopic, map[string]string{
		"topic": topic, "readQueueNums": "1", "writeQueueNums": "1", "perm": "6", "topicFilterType": "SINGLE_TAG",
	}, nil))
	if err != nil || resp.Code != remoting.Success {
		t.Fatalf("create topic after the panic on the same TLS connection: %v %+v", err, resp)
	}
	resp, err = c.Invoke(ctx, processtest.SendRequest(topic, 0, []byte("after the panic"), nil))
	if err != nil || resp.Code != remoting.Success {
		t.Fatalf("send after the panic on the same TLS connection: %v %+v", err, resp)
	}
	if got := gatherPanics(t, n.Registry().Gather, "remoting", "25"); got != 1 {
		t.Fatalf("wheelmq_handler_panics_total{protocol=remoting,kind=25} = %v, want 1", got)
	}
}

package process_test

import (
	"net"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/actors/pipeline"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
)

// A raw TCP connection that sends nothing is closed by the broker's port
// and by the name server's once the idle bound passed, and counted.
func TestSilentConnectionsClosedOnBothPorts(t *testing.T) {
	n := processtest.Start(t, processtest.Options{Mutate: func(c *pipeline.Config) { c.IdleConnTimeout = 200 * time.Millisecond }})
	for _, addr := range []string{n.BrokerAddr(), n.NamesrvAddr()} {
		conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		start := time.Now()
		if _, err := conn.Read(make([]byte, 1)); err == nil {
			t.Fatalf("%s: the silent connection got bytes", addr)
		} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Fatalf("%s: the silent connection was not closed within 5 s", addr)
		}
		if el := time.Since(start); el > 3*time.Second {
			t.Fatalf("%s: closed after %s", addr, el)
		}
		conn.Close()
	}
	if v := metricValue(t, n, "wheelmq_net_idle_closed_total"); v < 2 {
		t.Fatalf("wheelmq_net_idle_closed_total %v, want 2", v)
	}
}

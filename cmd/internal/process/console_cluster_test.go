package process_test

import (
	"context"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/actors/broker"
	"github.com/wheelmq/wheelmq/actors/pipeline"
	"github.com/wheelmq/wheelmq/cmd/internal/console"
	"github.com/wheelmq/wheelmq/cmd/internal/process"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
)

// TestConsoleClusterOfTwo starts two brokers registered with the first
// one's name server and reads each console's cluster page: the first reads
// its embedded name server in process, the second asks it over the
// network; each names both brokers, its own row from its own state and
// the other's from that broker's runtime figures.
func TestConsoleClusterOfTwo(t *testing.T) {
	t.Parallel()
	a := processtest.Start(t, processtest.Options{Metrics: true, MutateNode: func(c *process.Config) { c.Console = true }})
	b := processtest.Start(t, processtest.Options{Metrics: true,
		Mutate:     func(c *pipeline.Config) { c.NameServers, c.BrokerName = []string{a.NamesrvAddr()}, "broker-b" },
		MutateNode: func(c *process.Config) { c.Console = true }})
	ctx := context.Background()
	for _, n := range []*process.Node{a, b} {
		var cl console.Cluster
		deadline := time.Now().Add(15 * time.Second)
		for {
			var err error
			if cl, err = process.ConsoleOf(n).Cluster(ctx, console.Credentials{}); err != nil {
				t.Fatal(err)
			}
			if len(cl.Brokers) == 2 || time.Now().After(deadline) {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if len(cl.Brokers) != 2 {
			t.Fatalf("%s's cluster page: %+v, want two brokers", n.BrokerAddr(), cl.Brokers)
		}
		want := map[string]string{"broker-a": a.BrokerAddr(), "broker-b": b.BrokerAddr()}
		for _, row := range cl.Brokers {
			if row.Addr != want[row.Name] || row.Role != "standalone" || row.Version != broker.VersionDesc || row.Error != "" {
				t.Fatalf("%s's cluster page, row %+v; want %s at %s, standalone, %s", n.BrokerAddr(), row, row.Name, want[row.Name], broker.VersionDesc)
			}
		}
	}
}

package main

// `wheelctl bench produce`: send throughput and latency through the
// messageProducer interface, optionally side by side with the ack-only
// peer (--peer), which measures the ceiling of the client and loopback.

import (
	"context"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"
)

// produceOpts shape a produce run.
type produceOpts struct {
	size, producers, window int
	clients                 int // producer clients the producers share (0: one each)
	duration                time.Duration
	count                   int64
	mode, topic, client     string
	protocol, grpcEndpoint  string // --protocol remoting|grpc; the broker's gRPC endpoint
	peer                    bool
	group                   groupFlags // --replicas: a spawned single broker or group
	simpleAcks              string     // bench consume --protocol grpc: how the SimpleConsumers ack (benchpop.go)
}

func (o *produceOpts) addFlags(c *cobra.Command) {
	f := c.Flags()
	f.IntVar(&o.size, "size", 256, "message body bytes")
	f.IntVar(&o.producers, "producers", 1, "producers: goroutines sending at once")
	f.IntVar(&o.clients, "clients", 0, "producer clients (connections) the producers share round-robin (0: one per producer)")
	f.DurationVar(&o.duration, "duration", 5*time.Second, "how long to send (unless --count)")
	f.Int64Var(&o.count, "count", 0, "send this many messages in all instead of for --duration")
	f.StringVar(&o.mode, "mode", "sync", "sync (one send in flight per producer), async (--window in flight) or oneway")
	f.IntVar(&o.window, "window", 256, "async: sends in flight per producer")
	f.StringVar(&o.topic, "topic", "", "topic (default: a new one per run, auto-created)")
	f.StringVar(&o.client, "client", "native", "producer implementation: "+clientNames())
	f.StringVar(&o.protocol, "protocol", "remoting", "remoting, or grpc: the RocketMQ 5 Go SDK against the broker's gRPC endpoint "+
		"(the producer unless --client is given; bench consume: SimpleConsumers too)")
	f.StringVar(&o.grpcEndpoint, "grpc-endpoint", "", "the broker's gRPC endpoint host:port for --protocol grpc (default: the in-process broker's)")
	_ = c.RegisterFlagCompletionFunc("protocol", fixedCompletion("remoting", "grpc"))
	_ = c.RegisterFlagCompletionFunc("mode", fixedCompletion("sync", "async", "oneway"))
}

// validate checks the flags; with --protocol grpc and no --client the
// producer is the v5 SDK's.
func (o *produceOpts) validate(c *cobra.Command, minSize int) error {
	switch o.protocol {
	case "remoting":
	case "grpc":
		if !c.Flags().Changed("client") {
			o.client = "grpc"
		}
	default:
		return usagef("--protocol %q: want remoting or grpc", o.protocol)
	}
	switch {
	case o.mode != "sync" && o.mode != "async" && o.mode != "oneway":
		return usagef("--mode %q: want sync, async or oneway", o.mode)
	case o.size < minSize:
		return usagef("--size %d: want at least %d", o.size, minSize)
	case o.producers < 1 || o.window < 1 || o.clients < 0 || o.clients > o.producers:
		return usagef("--producers and --window must be at least 1, --clients between 0 and --producers")
	case o.count < 0 || (o.count == 0 && o.duration <= 0):
		return usagef("give a positive --duration or --count")
	}
	if _, ok := producerKinds[o.client]; !ok {
		return usagef("--client %q: want one of %s", o.client, clientNames())
	}
	return nil
}

func newBenchProduceCmd(g *globals) *cobra.Command {
	var o produceOpts
	var common benchCommon
	c := &cobra.Command{
		Use:   "produce [--size 256] [--producers 1] [--duration 5s | --count N] [--mode sync|async|oneway] [--peer]",
		Short: "Send throughput and latency (p50/p90/p99/max)",
		Long: `Send messages as fast as the producers can and report throughput and send latency (sync: the
round trip of each send; async: from the call to its callback; oneway: none).

--peer runs the same workload first against an ack-only peer (a name server and broker in one
port that acknowledge every send and store nothing): the ceiling the client and the loopback allow
on this machine; the table then shows wheelmq's rate as a ratio of it.

--replicas N spawns the target from a wheelmq binary (--wheelmq, default bin/wheelmq): 1 a single
broker with --replication none, N >= 2 a replicated group (three name servers with raft
controllers, N brokers with --min-in-sync-replicas --min-in-sync), the first broker its master and
every broker in the sync-state set before the clock starts; --master-profile fetches the master's
CPU profile during the workload. 'wheelctl bench replicated' runs the whole comparison.

The global --access-key/--secret-key and --tls flags apply to every connection, so a signed or
TLS run can be put side by side with a plain one (the report's header says which it was; see
docs/benchmarks.md). The ack-only peer ignores signatures and speaks plaintext only.`,
		Example: `  wheelctl bench produce
  wheelctl bench produce --producers 16 --clients 1 --duration 10s --peer
  wheelctl bench produce --mode async --window 512 --count 1000000 --json
  wheelctl bench produce --namesrv 127.0.0.1:9876 --size 4096
  wheelctl bench produce --replicas 3 --min-in-sync 2 --wheelmq bin/wheelmq --producers 16 --clients 1
  WHEELMQ_SECRET_KEY=... wheelctl bench produce --namesrv 127.0.0.1:9876 --access-key bench   # signed
  wheelctl bench produce --namesrv 127.0.0.1:9876 --tls --tls-ca ca.pem --mode async         # over TLS`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.validate(cmd, 1); err != nil {
				return err
			}
			if err := common.checkFlush(); err != nil {
				return err
			}
			stopProfile, err := startCPUProfile(common.cpuprofile)
			if err != nil {
				return err
			}
			defer stopProfile()
			rep, err := runProduceBench(cmd, g, o, common)
			if rep != nil {
				if perr := rep.print(g.stdout, common.json); perr != nil {
					return perr
				}
			}
			return err
		},
	}
	o.addFlags(c)
	c.Flags().BoolVar(&o.peer, "peer", false, "also run against the ack-only peer and show the ratio")
	o.group.addFlags(c)
	common.addFlags(c)
	return c
}

// checkFlush validates --flush before anything starts.
func (c *benchCommon) checkFlush() error {
	if c.flush != "async" && c.flush != "sync" {
		return usagef("--flush %q: want async or sync", c.flush)
	}
	return nil
}

// runProduceBench runs the workload against the peer (with --peer) and the
// broker.
func runProduceBench(cmd *cobra.Command, g *globals, o produceOpts, common benchCommon) (*benchReport, error) {
	ctx := cmd.Context()
	if o.peer && o.client == "grpc" {
		return nil, usagef("--peer with the gRPC producer: the ack-only peer speaks remoting only; compare with a --protocol remoting run of the same broker instead")
	}
	if o.peer && g.sec.overTLS() {
		return nil, usagef("--peer with --tls: the ack-only peer speaks plaintext only; compare a TLS run with a plaintext run of the same broker instead")
	}
	rep := &benchReport{Kind: "produce", Client: o.client, Mode: o.mode, Size: o.size, Producers: o.producers,
		Clients: o.clients, DurationS: o.duration.Seconds(), Count: o.count, Security: g.sec.describe()}
	if rep.Clients == 0 {
		rep.Clients = o.producers
	}
	if o.mode == "async" {
		rep.Window = o.window
	}
	if o.count > 0 {
		rep.DurationS = 0
	}
	target, err := o.group.open(cmd, g, common.flush)
	if err != nil {
		return nil, err
	}
	defer target.stop()
	rep.Broker = target.desc
	if o.grpcEndpoint == "" {
		o.grpcEndpoint = target.grpc
	}
	if o.peer {
		peer, err := startNullBroker(benchLogger(g.stderr))
		if err != nil {
			return nil, err
		}
		res, err := produceOnce(ctx, peer.addr(), "ack-only peer", o, &g.sec, g.stderr)
		peer.stop()
		if err != nil {
			return nil, fmt.Errorf("against the ack-only peer: %w", err)
		}
		rep.Results = append(rep.Results, res)
	}
	waitProfile := target.profile(ctx, o, g)
	res, err := produceOnce(ctx, target.namesrv, "wheelmq", o, &g.sec, g.stderr)
	waitProfile()
	if err != nil {
		return nil, err
	}
	rep.Results = append(rep.Results, res)
	if o.peer && rep.Results[0].MsgsPerSec > 0 {
		ratio := res.MsgsPerSec / rep.Results[0].MsgsPerSec
		rep.RatioToPeer = &ratio
	}
	if res.Messages == 0 {
		return rep, fmt.Errorf("no send was acknowledged: %s", res.FirstError)
	}
	return rep, nil
}

// produceOnce runs the workload against one name server with fresh
// producers.
func produceOnce(ctx context.Context, namesrv, label string, o produceOpts, sec *security, progressTo io.Writer) (benchResult, error) {
	topic := o.topic
	if topic == "" {
		topic = fmt.Sprintf("bench_produce_%d", time.Now().UnixNano())
	}
	body := make([]byte, o.size)
	for i := range body {
		body[i] = byte('a' + i%26)
	}
	msg := &outMessage{Topic: topic, Body: body}
	clients := o.clients
	if clients == 0 {
		clients = o.producers
	}
	producers := make([]messageProducer, clients)
	defer func() {
		for _, p := range producers {
			if p != nil {
				_ = p.Close()
			}
		}
	}()
	for i := range producers {
		p, err := newProducer(o.client, producerOptions{Namesrv: namesrv, Group: "wheelctl_bench", Retries: 1, Security: sec,
			GRPCEndpoint: o.grpcEndpoint, Topics: []string{topic}})
		if err != nil {
			return benchResult{}, err
		}
		producers[i] = p
		if err := warmUp(ctx, p, msg); err != nil {
			return benchResult{}, err
		}
	}
	workers := make([]messageProducer, o.producers)
	for i := range workers {
		workers[i] = producers[i%clients]
	}
	return runWorkload(ctx, workers, label, o, msg, progressTo)
}

// runWorkload sends msg through each of workers (one goroutine each; a
// producer may appear more than once) in o's mode, for o's duration or
// count.
func runWorkload(ctx context.Context, workers []messageProducer, label string, o produceOpts, msg *outMessage,
	progressTo io.Writer) (benchResult, error) {
	var sent, failed atomic.Int64
	var firstErr atomic.Value
	fail := func(err error) {
		failed.Add(1)
		firstErr.CompareAndSwap(nil, err.Error())
	}
	lat := &latencies{}
	tickets := atomic.Int64{}
	tickets.Store(o.count)
	start := time.Now()
	deadline := start.Add(o.duration)
	more := func() bool {
		if ctx.Err() != nil {
			return false
		}
		if o.count > 0 {
			return tickets.Add(-1) >= 0
		}
		return time.Now().Before(deadline)
	}
	bar := startProgress(progressTo, label, o.count, o.duration, sent.Load)
	var wg sync.WaitGroup
	for _, p := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			switch o.mode {
			case "sync":
				for more() {
					t0 := time.Now()
					if _, err := p.SendSync(ctx, msg); err != nil {
						fail(err)
						continue
					}
					lat.add(time.Since(t0))
					sent.Add(1)
				}
			case "async":
				window := make(chan struct{}, o.window)
				var inflight sync.WaitGroup
				for more() {
					window <- struct{}{}
					inflight.Add(1)
					t0 := time.Now()
					err := p.SendAsync(ctx, msg, func(_ receipt, err error) {
						if err != nil {
							fail(err)
						} else {
							lat.add(time.Since(t0))
							sent.Add(1)
						}
						<-window
						inflight.Done()
					})
					if err != nil {
						fail(err)
						<-window
						inflight.Done()
					}
				}
				inflight.Wait()
			case "oneway":
				for more() {
					if err := p.SendOneway(ctx, msg); err != nil {
						fail(err)
						continue
					}
					sent.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	bar.finish()
	res := benchResult{Target: label, Messages: sent.Load(), Errors: failed.Load(), Latency: lat.summary()}
	if e, ok := firstErr.Load().(string); ok {
		res.FirstError = e
	}
	res.setRate(elapsed, o.size)
	return res, ctx.Err()
}

// warmUp sends until one send is acknowledged: route lookup, topic
// auto-creation and the connection happen before the clock starts.
func warmUp(ctx context.Context, p messageProducer, m *outMessage) error {
	var err error
	for i := 0; i < 5 && ctx.Err() == nil; i++ {
		if _, err = p.SendSync(ctx, m); err == nil {
			return nil
		}
		time.Sleep(500 * time.Millisecond)
	}
	if err == nil {
		err = ctx.Err()
	}
	return withHint(fmt.Errorf("warm-up send to %s: %w", m.Topic, err), "check --namesrv and that the broker auto-creates topics or give an existing --topic")
}

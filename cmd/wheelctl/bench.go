package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"
	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/pipeline"
	"github.com/wheelmq/wheelmq/actors/writer"
	"github.com/wheelmq/wheelmq/cmd/internal/process"
)

type benchOpts struct {
	target    string
	flush     string
	duration  time.Duration
	size      int
	window    int
	workloads []string
}

func runBench(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o benchOpts
	fs.StringVar(&o.target, "namesrv", "", "name server of a running wheelmq (default: start one in-process on a temp dir)")
	fs.StringVar(&o.flush, "flush", "async", "flush mode of the in-process wheelmq: async or sync")
	fs.DurationVar(&o.duration, "duration", 5*time.Second, "time per workload per target")
	fs.IntVar(&o.size, "size", 256, "message body bytes")
	fs.IntVar(&o.window, "window", 256, "outstanding async sends")
	cpuprofile := fs.String("cpuprofile", "", "write a CPU profile of the whole run (client and in-process broker) to this file")
	wl := fs.String("workloads", "sync1,sync16,async", "comma-separated: sync1 (one producer), sync16 (16 goroutines), async (windowed)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	o.workloads = strings.Split(*wl, ",")
	for _, w := range o.workloads {
		if w != "sync1" && w != "sync16" && w != "async" {
			return fmt.Errorf("unknown workload %q", w)
		}
	}
	rlog.SetLogLevel("error")
	log := zerolog.New(stderr).Level(zerolog.WarnLevel)
	stopProfile, err := startCPUProfile(*cpuprofile)
	if err != nil {
		return err
	}
	defer stopProfile()

	peer, err := startNullBroker(log)
	if err != nil {
		return err
	}
	defer peer.stop()
	target := o.target
	if target == "" {
		mode, err := writer.ParseFlushMode(o.flush)
		if err != nil {
			return err
		}
		dir, err := os.MkdirTemp("", "wheelctl-bench-")
		if err != nil {
			return fmt.Errorf("temp dir: %w", err)
		}
		defer os.RemoveAll(dir)
		bc := pipeline.DefaultConfig()
		bc.DataDir, bc.Listen, bc.Flush, bc.Logger = dir, "127.0.0.1:0", mode, log
		n, err := process.Start(process.Config{Broker: bc, RunBroker: true, NamesrvListen: "127.0.0.1:0", Logger: log})
		if err != nil {
			return fmt.Errorf("start wheelmq: %w", err)
		}
		defer n.Stop(context.Background())
		target = n.NamesrvAddr()
	}
	fmt.Fprintf(stdout, "send throughput, %d-byte bodies, %s per run, official Go client; peer = ack-only responder\n",
		o.size, o.duration)
	fmt.Fprintf(stdout, "%-8s %14s %14s %8s %12s\n", "workload", "peer msg/s", "wheelmq msg/s", "ratio", "wheelmq errs")
	for _, w := range o.workloads {
		pr, err := benchOne(peer.addr(), w, o)
		if err != nil {
			return fmt.Errorf("peer %s: %w", w, err)
		}
		wr, err := benchOne(target, w, o)
		if err != nil {
			return fmt.Errorf("wheelmq %s: %w", w, err)
		}
		fmt.Fprintf(stdout, "%-8s %14.0f %14.0f %8.2f %12d\n", w, pr.rate, wr.rate, wr.rate/pr.rate, wr.errors)
	}
	return nil
}

type benchResult struct {
	rate   float64
	errors int64
}

// benchOne runs one workload against one name server with a fresh producer.
func benchOne(namesrv, workload string, o benchOpts) (benchResult, error) {
	topic := fmt.Sprintf("bench_%s_%d", workload, time.Now().UnixNano())
	p, err := producer.NewDefaultProducer(
		producer.WithNsResolver(primitive.NewPassthroughResolver([]string{namesrv})),
		producer.WithGroupName("wheelctl_bench"),
		producer.WithInstanceName(fmt.Sprintf("bench-%d", time.Now().UnixNano())),
		producer.WithRetry(1),
	)
	if err != nil {
		return benchResult{}, err
	}
	if err := p.Start(); err != nil {
		return benchResult{}, err
	}
	defer p.Shutdown()
	body := make([]byte, o.size)
	for i := range body {
		body[i] = byte('a' + i%26)
	}
	ctx := context.Background()
	// Warm up: route lookup, topic auto-creation, connection.
	for i := 0; i < 3; i++ {
		if _, err = p.SendSync(ctx, primitive.NewMessage(topic, body)); err == nil {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	if err != nil {
		return benchResult{}, fmt.Errorf("warm-up send: %w", err)
	}
	var sent, failed atomic.Int64
	deadline := time.Now().Add(o.duration)
	start := time.Now()
	switch workload {
	case "sync1", "sync16":
		workers := 1
		if workload == "sync16" {
			workers = 16
		}
		var wg sync.WaitGroup
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for time.Now().Before(deadline) {
					if _, err := p.SendSync(ctx, primitive.NewMessage(topic, body)); err != nil {
						failed.Add(1)
						continue
					}
					sent.Add(1)
				}
			}()
		}
		wg.Wait()
	case "async":
		sem := make(chan struct{}, o.window)
		var wg sync.WaitGroup
		for time.Now().Before(deadline) {
			sem <- struct{}{}
			wg.Add(1)
			err := p.SendAsync(ctx, func(_ context.Context, _ *primitive.SendResult, err error) {
				if err != nil {
					failed.Add(1)
				} else {
					sent.Add(1)
				}
				<-sem
				wg.Done()
			}, primitive.NewMessage(topic, body))
			if err != nil {
				failed.Add(1)
				<-sem
				wg.Done()
			}
		}
		wg.Wait()
	default:
		return benchResult{}, errors.New("unknown workload")
	}
	elapsed := time.Since(start).Seconds()
	return benchResult{rate: float64(sent.Load()) / elapsed, errors: failed.Load()}, nil
}

// startCPUProfile writes a CPU profile to path until the returned stop is
// called; an empty path profiles nothing.
func startCPUProfile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		_ = f.Close()
	}, nil
}

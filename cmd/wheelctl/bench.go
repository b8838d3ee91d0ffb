package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"github.com/wheelmq/wheelmq/actors/pipeline"
	"github.com/wheelmq/wheelmq/actors/writer"
	"github.com/wheelmq/wheelmq/cmd/internal/process"
)

// benchCommon are the flags every benchmark has.
type benchCommon struct {
	flush      string
	json       bool
	cpuprofile string
}

func (c *benchCommon) addFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&c.flush, "flush", "async", "flush mode of the in-process wheelmq: async or sync")
	f.BoolVar(&c.json, "json", false, "print the results as JSON")
	f.StringVar(&c.cpuprofile, "cpuprofile", "", "write a CPU profile of this process (client, and broker when in-process)")
	_ = cmd.RegisterFlagCompletionFunc("flush", fixedCompletion("async", "sync"))
}

func newBenchCmd(g *globals) *cobra.Command {
	c := groupCmd("bench", "Benchmarks: produce, consume and timer messages",
		newBenchProduceCmd(g), newBenchConsumeCmd(g), newBenchTimerCmd(g, "timer"), newBenchAllCmd(g), newBenchReplicatedCmd(g),
		newBenchRedeliveryCmd(g))
	c.Long = `Benchmarks with a progress bar on stderr (when it is a terminal) and a final table, or --json.

Without --namesrv (or --broker for timer) they start a wheelmq in this process on a temporary
directory, so 'wheelctl bench produce' works with nothing else running.`
	return c
}

// newBenchTimerAlias keeps the former 'wheelctl bench-timer'.
func newBenchTimerAlias(g *globals) *cobra.Command {
	c := newBenchTimerCmd(g, "bench-timer")
	c.Hidden = true
	c.Deprecated = "use 'wheelctl bench timer'"
	return c
}

// benchLogger is the quiet logger of an in-process broker.
func benchLogger(w io.Writer) zerolog.Logger { return zerolog.New(w).Level(zerolog.WarnLevel) }

// benchTargetBroker is the broker a produce or consume benchmark drives.
type benchTargetBroker struct {
	namesrv string
	grpc    string // the broker's gRPC endpoint ("": unknown)
	desc    string
	stop    func()
	group   *procGroup // a spawned group (--replicas), else nil
	profDst string     // with group: write the master's CPU profile here during the workload
}

// openBenchBroker returns the broker --namesrv names, or starts one in
// this process on a temporary directory.
func openBenchBroker(cmd *cobra.Command, g *globals, flush string) (*benchTargetBroker, error) {
	if cmd.Flags().Changed("namesrv") {
		return &benchTargetBroker{namesrv: g.namesrv, desc: "name server " + g.namesrv, stop: func() {}}, nil
	}
	mode, err := writer.ParseFlushMode(flush)
	if err != nil {
		return nil, usageErr(err)
	}
	dir, err := os.MkdirTemp("", "wheelctl-bench-")
	if err != nil {
		return nil, fmt.Errorf("temp dir: %w", err)
	}
	log := benchLogger(g.stderr)
	bc := pipeline.DefaultConfig()
	bc.DataDir, bc.Listen, bc.Flush, bc.Logger = dir, "127.0.0.1:0", mode, log
	n, err := process.Start(process.Config{Broker: bc, RunBroker: true, NamesrvListen: "127.0.0.1:0", Logger: log,
		GRPC: process.GRPCConfig{Listen: "127.0.0.1:0"}})
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("start wheelmq in-process: %w", err)
	}
	return &benchTargetBroker{namesrv: n.NamesrvAddr(), grpc: n.GRPCAddr(), desc: "in-process (" + flush + " flush)", stop: func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = n.Stop(ctx)
		_ = os.RemoveAll(dir)
	}}, nil
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

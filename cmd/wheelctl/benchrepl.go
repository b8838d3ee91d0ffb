package main

// `wheelctl bench produce --replicas N`: the produce workload against a
// spawned single broker (--replicas 1, --replication none) or a spawned
// replicated group (--replicas >= 2, three name servers with controllers),
// and `wheelctl bench replicated`, the matrix of issue 17 (benchreplrun.go).

import (
	"context"
	"os"
	"path/filepath"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"
)

// groupFlags select a spawned target for bench produce.
type groupFlags struct {
	replicas      int
	minInSync     int
	bin           string
	masterProfile string
	keep          bool
}

func (f *groupFlags) addFlags(c *cobra.Command) {
	fs := c.Flags()
	fs.IntVar(&f.replicas, "replicas", 0, "spawn the target from --wheelmq: 1 a single broker (--replication none), N >= 2 a replicated group of N brokers with 3 name servers running controllers (0: the in-process broker)")
	fs.IntVar(&f.minInSync, "min-in-sync", 2, "--min-in-sync-replicas of the spawned group")
	fs.StringVar(&f.bin, "wheelmq", defaultWheelmqBin(), "wheelmq binary that --replicas spawns")
	fs.StringVar(&f.masterProfile, "master-profile", "", "with --replicas: write a CPU profile of the (master) broker process during the workload to this file")
	fs.BoolVar(&f.keep, "keep", false, "with --replicas: keep the spawned processes' directory (stores and logs)")
}

// defaultWheelmqBin is bin/wheelmq next to this binary or in the working
// directory, if there is one.
func defaultWheelmqBin() string {
	var cands []string
	if self, err := os.Executable(); err == nil {
		cands = append(cands, filepath.Join(filepath.Dir(self), "wheelmq"))
	}
	cands = append(cands, filepath.Join("bin", "wheelmq"))
	for _, c := range cands {
		if st, err := os.Stat(c); err == nil && !st.IsDir() {
			return c
		}
	}
	return ""
}

// open returns the target: the spawned one with --replicas, else
// openBenchBroker's.
func (f *groupFlags) open(cmd *cobra.Command, g *globals, flush string) (*benchTargetBroker, error) {
	if f.replicas == 0 {
		if f.masterProfile != "" {
			return nil, usagef("--master-profile needs --replicas (use --cpuprofile for the in-process broker)")
		}
		return openBenchBroker(cmd, g, flush)
	}
	if f.replicas < 0 || cmd.Flags().Changed("namesrv") || g.sec.overTLS() {
		return nil, usagef("--replicas: want 1 or more, and neither --namesrv nor --tls (the spawned brokers speak plaintext)")
	}
	spec := groupSpec{bin: f.bin, replicas: f.replicas, minInSync: f.minInSync, flush: flush,
		pprof: f.masterProfile != "", keep: f.keep}
	grp, err := startProcGroup(cmd.Context(), spec)
	if err != nil {
		return nil, err
	}
	return &benchTargetBroker{namesrv: grp.namesrvList(), desc: spec.describe(), stop: grp.close, group: grp,
		profDst: f.masterProfile}, nil
}

// profile starts the master's CPU profile for the workload's duration
// when asked; the returned wait blocks until it is written.
func (t *benchTargetBroker) profile(ctx context.Context, o produceOpts, g *globals) (wait func()) {
	if t.group == nil || t.profDst == "" {
		return func() {}
	}
	d := o.duration
	if o.count > 0 {
		d = 5 * time.Second
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := t.group.profileMaster(ctx, d, t.profDst); err != nil {
			log := zerolog.New(g.stderr)
			log.Error().Err(err).Str("file", t.profDst).Msg("master profile")
		}
	}()
	return func() { <-done }
}

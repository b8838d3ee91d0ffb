package controller

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/controller/raftstore"
)

// Files and directories under Config.Dir (docs/controller.md).
const (
	// RaftDBFile is the raft-boltdb file of earlier versions, converted
	// once at start (raftstore.MigrateBolt, store.go).
	RaftDBFile = raftstore.BoltFile
	// SnapshotDir holds the raft snapshots (raftstore.SnapshotStore: one
	// file per snapshot, the JSON State inside).
	SnapshotDir = raftstore.SnapshotDir
)

// Default raft timings, tuned for a LAN/loopback controller: a leader's
// death is noticed after HeartbeatTimeout (a follower starts an election
// then, randomized up to twice that) and a new leader is in place in about
// 0.5-1 s, well inside the brokers' 3 s lease, so that a controller
// failover never looks like a broker failure (the new leader also gives
// every broker a fresh lease). LeaderLeaseTimeout must not exceed
// HeartbeatTimeout: a partitioned leader steps down after it. hashicorp's
// defaults (1 s / 1 s / 500 ms) suit WANs; Config can restore them.
const (
	DefaultRaftHeartbeatTimeout = 500 * time.Millisecond
	DefaultRaftElectionTimeout  = 500 * time.Millisecond
	DefaultRaftLeaderLease      = 250 * time.Millisecond
)

// raftNode is the raft machinery of one controller.
type raftNode struct {
	r        *raft.Raft
	store    *raftStores
	trans    raft.Transport
	ownTrans bool         // trans was built here (not Config.Transport): closed with the node
	layer    *secureLayer // trans's authenticating stream layer (nil with Config.Transport)
	selfID   raft.ServerID
}

// openRaft opens (or bootstraps) the raft node of cfg over fsm.
func openRaft(cfg *Config, fsm *FSM) (*raftNode, error) {
	out := &logWriter{log: cfg.Logger.With().Str("component", "raft").Logger()}
	hlog := hclog.New(&hclog.LoggerOptions{Name: "raft", Level: hclog.Warn, Output: out})
	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(cfg.advertise())
	rc.HeartbeatTimeout = orDur(cfg.HeartbeatTimeout, DefaultRaftHeartbeatTimeout)
	rc.ElectionTimeout = orDur(cfg.ElectionTimeout, DefaultRaftElectionTimeout)
	rc.LeaderLeaseTimeout = orDur(cfg.LeaderLeaseTimeout, DefaultRaftLeaderLease)
	rc.CommitTimeout = 20 * time.Millisecond
	rc.SnapshotThreshold = 1024
	rc.TrailingLogs = 1024
	rc.Logger = hlog
	store, err := openStores(cfg.Dir, cfg.FS, cfg.Logger.With().Str("component", "raftstore").Logger())
	if err != nil {
		return nil, err
	}
	trans, layer, err := openTransport(cfg, hlog)
	if err != nil {
		_ = store.Close()
		return nil, err
	}
	n := &raftNode{store: store, trans: trans, ownTrans: layer != nil, layer: layer, selfID: rc.LocalID}
	has, err := store.hasState()
	if err != nil {
		n.closeStores()
		return nil, fmt.Errorf("controller raft state: %w", err)
	}
	if !has {
		conf := raft.Configuration{}
		for _, p := range cfg.peers() {
			conf.Servers = append(conf.Servers, raft.Server{Suffrage: raft.Voter, ID: raft.ServerID(p), Address: raft.ServerAddress(p)})
		}
		if err := raft.BootstrapCluster(rc, store.log, store.stable, store.snaps, trans, conf); err != nil {
			n.closeStores()
			return nil, fmt.Errorf("controller bootstrap: %w", err)
		}
		cfg.Logger.Info().Strs("peers", cfg.peers()).Str("dir", cfg.Dir).Msg("controller: bootstrapped raft from the peer list")
	}
	n.r, err = raft.NewRaft(rc, &raftFSM{f: fsm}, store.log, store.stable, store.snaps, trans)
	if err != nil {
		n.closeStores()
		return nil, fmt.Errorf("controller raft: %w", err)
	}
	return n, nil
}

// openTransport is cfg.Transport (not the node's: no layer), or a
// NetworkTransport over the authenticating stream layer (raftsec.go) on a
// listener opened with cfg.ListenFunc.
func openTransport(cfg *Config, hlog hclog.Logger) (raft.Transport, *secureLayer, error) {
	if cfg.Transport != nil {
		return cfg.Transport, nil, nil
	}
	adv, err := net.ResolveTCPAddr("tcp", cfg.advertise())
	if err != nil {
		return nil, nil, fmt.Errorf("controller advertise %s: %w", cfg.advertise(), err)
	}
	if adv.IP == nil || adv.IP.IsUnspecified() {
		return nil, nil, fmt.Errorf("controller advertise %s: not an address peers can reach (set Advertise)", cfg.advertise())
	}
	listen := cfg.ListenFunc
	if listen == nil {
		listen = net.Listen
	}
	ln, err := listen("tcp", cfg.Listen)
	if err != nil {
		return nil, nil, fmt.Errorf("controller listen %s: %w", cfg.Listen, err)
	}
	layer := newSecureLayer(ln, adv, cfg.Security, cfg.advertise(), cfg.peers(), cfg.Logger.With().Str("component", "raft-transport").Logger())
	trans := raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{Stream: layer, MaxPool: 3, Timeout: 2 * time.Second, Logger: hlog})
	return trans, layer, nil
}

// close shuts raft down and closes its stores.
func (n *raftNode) close() error {
	err := n.r.Shutdown().Error()
	n.closeStores()
	if err != nil {
		return fmt.Errorf("controller raft shutdown: %w", err)
	}
	return nil
}

func (n *raftNode) closeStores() {
	if c, ok := n.trans.(raft.WithClose); ok && n.ownTrans {
		_ = c.Close()
	}
	_ = n.store.Close()
}

// raftFSM adapts FSM to raft.FSM.
type raftFSM struct{ f *FSM }

// Apply implements raft.FSM: it returns a Result.
func (a *raftFSM) Apply(l *raft.Log) interface{} {
	if l.Type != raft.LogCommand {
		return nil
	}
	var c Command
	if err := json.Unmarshal(l.Data, &c); err != nil {
		return Result{Code: CodeInvalidRequest, Remark: "undecodable controller command: " + err.Error()}
	}
	return a.f.Apply(c)
}

// Snapshot implements raft.FSM.
func (a *raftFSM) Snapshot() (raft.FSMSnapshot, error) {
	b, err := a.f.Snapshot()
	if err != nil {
		return nil, err
	}
	return jsonSnapshot(b), nil
}

// Restore implements raft.FSM.
func (a *raftFSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		return fmt.Errorf("controller restore: %w", err)
	}
	return a.f.Restore(b)
}

// jsonSnapshot is a State snapshot already encoded.
type jsonSnapshot []byte

// Persist implements raft.FSMSnapshot.
func (s jsonSnapshot) Persist(sink raft.SnapshotSink) error {
	if _, err := sink.Write(s); err != nil {
		_ = sink.Cancel()
		return fmt.Errorf("controller snapshot write: %w", err)
	}
	return sink.Close()
}

// Release implements raft.FSMSnapshot.
func (jsonSnapshot) Release() {}

// logWriter turns hclog's lines into zerolog events.
type logWriter struct{ log zerolog.Logger }

// Write implements io.Writer.
func (w *logWriter) Write(p []byte) (int, error) {
	sc := bufio.NewScanner(strings.NewReader(string(p)))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		ev := w.log.Info()
		switch {
		case strings.Contains(line, "[ERROR]"):
			ev = w.log.Error()
		case strings.Contains(line, "[WARN]"):
			ev = w.log.Warn()
		}
		ev.Msg(line)
	}
	return len(p), nil
}

func orDur(v, def time.Duration) time.Duration {
	if v > 0 {
		return v
	}
	return def
}

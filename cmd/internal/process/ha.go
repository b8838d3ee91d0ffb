package process

// Replicated broker groups (--replication controller; docs/operations.md,
// "Replicated broker groups"): the wiring of the three parts a broker runs
// besides its stages.
//
//	member (actors/controller/member)   heartbeats the controller leader in
//	                                    the name servers; sets the role
//	replication (actors/replication)    streams the CommitLog master -> replicas
//	                                    on --ha-listen; its confirmed offset is
//	                                    the store's durable end and the writer's
//	                                    Confirmer
//	pipeline (actors/pipeline)          follows the role: promotion, demotion,
//	                                    master-only stages, dispatch up to the
//	                                    confirmed offset
//
// One role.Holder links them: the member writes it, everything else reads it.

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/controller/member"
	"github.com/wheelmq/wheelmq/actors/pipeline"
	"github.com/wheelmq/wheelmq/actors/replication"
	"github.com/wheelmq/wheelmq/actors/role"
	"github.com/wheelmq/wheelmq/actors/writer"
	"github.com/wheelmq/wheelmq/netloop/auth"
	"github.com/wheelmq/wheelmq/netloop/ctlwire"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage"
	"github.com/wheelmq/wheelmq/storage/ha"
)

// cutTimeout bounds the wait for dispatch to drop derived state past a
// replica's truncation point.
const cutTimeout = 10 * time.Second

// haWiring is a replicated broker's member and replication service.
type haWiring struct {
	svc    atomic.Pointer[replication.Service]
	member atomic.Pointer[member.Member]
}

// prepareReplication readies cfg for controller mode (a no-op otherwise,
// and for a config with its own StartReplication):
// a Holder starting as a replica without master (nothing is taken until
// the controller says), the metadata log, and the replication service,
// which the pipeline starts once its stages run.
func prepareReplication(cfg *pipeline.Config) *haWiring {
	if cfg.Replication != pipeline.ReplicationController || cfg.StartReplication != nil {
		return nil // standalone, or a config that brings its own stream and role (tests)
	}
	w := &haWiring{}
	if cfg.Role == nil {
		cfg.Role = role.NewHolder(role.State{Kind: role.Replica, BrokerID: -1})
	}
	cfg.MetadataLog = true
	if cfg.Registerer != nil {
		if err := cfg.Registerer.Register(prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "wheelmq_replication_refused_total",
			Help: "Connections the HA port refused before the peer proved the group's replication secret.",
		}, func() float64 {
			if svc := w.svc.Load(); svc != nil {
				return float64(svc.Refused())
			}
			return 0
		})); err != nil {
			cfg.Logger.Warn().Err(err).Msg("replication: refusal metric not registered")
		}
	}
	cfg.StartReplication = func(env pipeline.ReplicationEnv) (*pipeline.Replication, error) {
		epochs, err := ha.OpenEpochs(env.Store.FS, filepath.Join(env.Store.Dir, "ha"))
		if err != nil {
			return nil, fmt.Errorf("open epoch file: %w", err)
		}
		if err := reconcileEpochs(env.Store, epochs, env.Logger); err != nil {
			return nil, err
		}
		svc, err := replication.Start(env.System, replication.Options{
			Store: env.Store, Listen: cfg.HAListen, Advertise: cfg.HAAdvertise, TLS: haTLS(cfg), DialTLS: cfg.HADialTLS,
			VerifyMaster: cfg.HAVerifyMaster,
			Group:        haGroup(cfg), Secret: cfg.HASecret, Role: env.Role, Epochs: epochs,
			FlushSync: cfg.Flush == writer.FlushSync, MinInSync: cfg.MinInSyncReplicas,
			StartConfirmed: env.Store.Dispatched.Load(), Logger: env.Logger,
			Stages: env.Stages, Retire: env.Retire,
			OnAppended: func(int64) { env.Kick() },
			OnTruncate: func(off int64) { cutDerived(env, off) },
			OnSyncStateSetChange: func(set []int64) {
				if m := w.member.Load(); m != nil {
					m.ProposeSyncStateSet(set)
				}
			},
		})
		if err != nil {
			return nil, err
		}
		w.svc.Store(svc)
		return &pipeline.Replication{
			Confirmer: svc, Durable: svc, Epochs: epochAppender{epochs},
			Replicas: func() []pipeline.ReplicaLag { return replicaLags(svc.Replicas()) },
			Stop:     svc.Stop, Appended: func() { svc.Appended(env.Store.CommitLog.MaxOffset()) },
		}, nil
	}
	return w
}

// haTLS is the HA port's TLS configuration: HAServerTLS when both ends of
// the stream are configured, else nil (plaintext).
func haTLS(cfg *pipeline.Config) *tls.Config {
	if cfg.HAServerTLS == nil || cfg.HADialTLS == nil {
		return nil
	}
	return cfg.HAServerTLS
}

// haGroup names the replicated group in the stream's authentication.
func haGroup(cfg *pipeline.Config) string { return cfg.Cluster + "/" + cfg.BrokerName }

// cutDerived drops consume-queue and index entries past a replica's
// truncation point before the receiver appends the master's bytes there.
func cutDerived(env pipeline.ReplicationEnv, off int64) {
	done := make(chan error, 1)
	env.Cut(off, func(err error) { done <- err })
	select {
	case err := <-done:
		if err != nil {
			env.Logger.Error().Err(err).Int64("offset", off).Msg("replica truncation: dropping derived state failed")
		}
	case <-time.After(cutTimeout):
		env.Logger.Error().Int64("offset", off).Dur("waited", cutTimeout).
			Msg("replica truncation: dispatch did not drop derived state in time")
	}
}

// startMember starts the controller client once the broker's address is
// known.
func (w *haWiring) startMember(b *Broker, cfg pipeline.Config) error {
	if w == nil {
		return nil
	}
	svc := w.svc.Load()
	if svc == nil {
		return fmt.Errorf("replication: the CommitLog stream did not start")
	}
	haAddr := dialableHA(svc.Addr(), b.advertise.Addr().String()) // --ha-advertise, or where it listens
	svc.SetAdvertise(haAddr)                                      // the master proves this address to its replicas
	var sign = auth.Credentials(cfg.RegisterCredentials).Signer()
	if cfg.RegisterCredentials.IsZero() {
		sign = nil
	}
	st := b.pipe.Store()
	log := cfg.Logger.With().Str("component", "controller-member").Logger()
	m, err := member.Start(member.Options{
		Controllers: cfg.NameServers, Cluster: cfg.Cluster, BrokerName: cfg.BrokerName,
		BrokerAddr: b.advertise.String(), HAAddr: haAddr, Dir: cfg.DataDir, Role: cfg.Role,
		MaxOffset: st.CommitLog.MaxOffset, Confirmed: st.DurableEnd,
		Dial: ctlwire.Dialer(remoting.ClientOptions{Sign: sign, TLS: cfg.NamesrvTLS, Logger: log}), Logger: log,
	})
	if err != nil {
		return fmt.Errorf("replication: controller member: %w", err)
	}
	w.member.Store(m)
	return nil
}

// stopMember stops the controller client (first in a broker's stop: the
// controller then elects another master at once, on the closed connection).
func (w *haWiring) stopMember(ctx context.Context) error {
	if w == nil {
		return nil
	}
	if m := w.member.Load(); m != nil {
		return m.Stop(ctx)
	}
	return nil
}

// dialableHA turns the HA listener's bound address into one the other
// brokers can dial: an unspecified host becomes the broker's advertised
// host.
func dialableHA(bound, host string) string {
	h, port, err := net.SplitHostPort(bound)
	if err != nil {
		return bound
	}
	if ip := net.ParseIP(h); h == "" || (ip != nil && ip.IsUnspecified()) {
		return net.JoinHostPort(host, port)
	}
	return bound
}

// epochAppender adapts ha.Epochs to pipeline.EpochLog.
type epochAppender struct{ e *ha.Epochs }

func (a epochAppender) Append(epoch, start int64) error { return a.e.Append(epoch, start) }

// Entries lists the file (pipeline.EpochLister: GET_BROKER_EPOCH_CACHE).
func (a epochAppender) Entries() []ha.Epoch { return a.e.Entries() }

// LastEpoch is the newest epoch in the file (-1: none).
func (a epochAppender) LastEpoch() int64 {
	if last, ok := a.e.Last(); ok {
		return last.Epoch
	}
	return -1
}

func replicaLags(rs []replication.ReplicaStatus) []pipeline.ReplicaLag {
	out := make([]pipeline.ReplicaLag, 0, len(rs))
	for _, r := range rs {
		out = append(out, pipeline.ReplicaLag{ReplicaID: r.ReplicaID, Addr: r.Addr, LagBytes: r.LagBytes, InSync: r.InSync})
	}
	return out
}

// reconcileEpochs drops the epoch entries that start past the recovered
// CommitLog's end (its tail was lost: this node holds nothing of those
// epochs), so that the consistent point a master computes with this node
// is not taken from an epoch history its log does not have
// (storage.FixEpoch).
func reconcileEpochs(st *storage.Store, epochs *ha.Epochs, log zerolog.Logger) error {
	end := st.CommitLog.MaxOffset()
	last, ok := epochs.Last()
	if !ok || last.Start <= end {
		return nil
	}
	before := len(epochs.Entries())
	if err := epochs.TruncateAfter(end); err != nil {
		return fmt.Errorf("reconcile epoch file: %w", err)
	}
	st.Corrections.Record(log, storage.Correction{What: storage.FixEpoch, Subject: fmt.Sprintf("epoch %d", last.Epoch),
		From: last.Start, To: end, Dropped: int64(before - len(epochs.Entries())), CommitLogEnd: end})
	return nil
}

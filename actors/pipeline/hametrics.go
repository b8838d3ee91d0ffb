package pipeline

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/wheelmq/wheelmq/actors/role"
)

// haCollector exports the broker's replication state (controller mode):
//
//	wheelmq_ha_role                      1 master (unfenced), 0 otherwise
//	wheelmq_ha_epoch                     the master epoch of the role
//	wheelmq_ha_confirmed_offset          Store.DurableEnd (the confirmed offset)
//	wheelmq_ha_sync_state_set_size       members of the sync-state set
//	wheelmq_ha_replica_lag_bytes{replica} bytes each replica is behind (master)
type haCollector struct {
	p                                *Pipeline
	roleD, epochD, confD, sssD, lagD *prometheus.Desc
	fencedD                          *prometheus.Desc
}

func newHACollector(p *Pipeline) *haCollector {
	return &haCollector{p: p,
		roleD:   prometheus.NewDesc("wheelmq_ha_role", "1 while the broker is its group's unfenced master, 0 as a replica (or fenced).", nil, nil),
		epochD:  prometheus.NewDesc("wheelmq_ha_epoch", "The master epoch the broker's role belongs to.", nil, nil),
		confD:   prometheus.NewDesc("wheelmq_ha_confirmed_offset", "CommitLog offset every sync-state-set member holds: consumers see nothing above it.", nil, nil),
		sssD:    prometheus.NewDesc("wheelmq_ha_sync_state_set_size", "Members of the sync-state set, master included.", nil, nil),
		lagD:    prometheus.NewDesc("wheelmq_ha_replica_lag_bytes", "CommitLog bytes a replica is behind the master (on the master).", []string{"replica"}, nil),
		fencedD: prometheus.NewDesc("wheelmq_ha_fenced", "1 while the master is fenced (lease not renewed).", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *haCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.roleD, c.epochD, c.confD, c.sssD, c.lagD, c.fencedD} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *haCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.p.role.Get()
	isMaster, fenced := 0.0, 0.0
	if st.Kind == role.Master && !st.Fenced {
		isMaster = 1
	}
	if st.Fenced {
		fenced = 1
	}
	ch <- prometheus.MustNewConstMetric(c.roleD, prometheus.GaugeValue, isMaster)
	ch <- prometheus.MustNewConstMetric(c.fencedD, prometheus.GaugeValue, fenced)
	ch <- prometheus.MustNewConstMetric(c.epochD, prometheus.GaugeValue, float64(st.Epoch))
	ch <- prometheus.MustNewConstMetric(c.confD, prometheus.GaugeValue, float64(c.p.store.DurableEnd()))
	ch <- prometheus.MustNewConstMetric(c.sssD, prometheus.GaugeValue, float64(len(st.SyncStateSet)))
	for _, r := range c.p.ReplicaLags() {
		ch <- prometheus.MustNewConstMetric(c.lagD, prometheus.GaugeValue, float64(r.LagBytes),
			strconv.FormatInt(r.ReplicaID, 10))
	}
}

// ReplicaLags lists the replicas' lag as the replication service reports
// it (nil: standalone, a replica, or no service).
func (p *Pipeline) ReplicaLags() []ReplicaLag {
	if p.repl == nil || p.repl.Replicas == nil {
		return nil
	}
	return p.repl.Replicas()
}

// HAStatus is the broker's replication state for /healthz and the runtime
// info (zero Mode: ReplicationNone).
type HAStatus struct {
	Mode      ReplicationMode
	Role      role.State
	Confirmed int64
}

// HA returns the replication state now.
func (p *Pipeline) HA() HAStatus {
	if !p.replicated() {
		return HAStatus{}
	}
	return HAStatus{Mode: p.cfg.Replication, Role: p.role.Get(), Confirmed: p.store.DurableEnd()}
}

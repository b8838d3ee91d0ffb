package main

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/wheelmq/wheelmq/cmd/internal/admin"
)

// clusterBroker is one broker of `wheelctl cluster list --json`: what the
// name server routes (cluster, broker, brokerId, addr) and what the broker
// says of itself (GET_BROKER_RUNTIME_INFO; Error when it could not).
type clusterBroker struct {
	Cluster         string  `json:"cluster"`
	Broker          string  `json:"broker"`
	BrokerID        int64   `json:"brokerId"`
	Addr            string  `json:"addr"`
	Version         string  `json:"version,omitempty"`
	UptimeMs        int64   `json:"uptimeMs,omitempty"`
	InTPS           float64 `json:"inTps"`
	OutTPS          float64 `json:"outTps"`
	TimerBacklog    int64   `json:"timerBacklog"`
	Role            string  `json:"role"` // standalone, master, replica
	Fenced          bool    `json:"fenced"`
	Epoch           int64   `json:"epoch"`
	SyncStateSet    []int64 `json:"syncStateSet"`
	ConfirmedOffset int64   `json:"confirmedOffset"`
	Error           string  `json:"error,omitempty"`
}

// printClusterJSON prints the brokers and their runtime figures as a JSON
// array.
func printClusterJSON(ctx context.Context, g *globals, s *admin.Session, brokers []admin.Broker) error {
	out := make([]clusterBroker, 0, len(brokers))
	for _, b := range brokers {
		cb := clusterBroker{Cluster: b.Cluster, Broker: b.Name, BrokerID: b.ID, Addr: b.Addr, Role: "standalone",
			SyncStateSet: []int64{}}
		if info, err := s.RuntimeInfo(ctx, b.Addr); err != nil {
			cb.Error = err.Error()
		} else {
			fillRuntime(&cb, info, time.Now())
		}
		out = append(out, cb)
	}
	enc := json.NewEncoder(g.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// fillRuntime copies a GET_BROKER_RUNTIME_INFO table into cb.
func fillRuntime(cb *clusterBroker, info map[string]string, now time.Time) {
	num := func(k string) int64 { n, _ := strconv.ParseInt(info[k], 10, 64); return n }
	tps := func(k string) float64 { // "10s 60s 600s"
		if f := strings.Fields(info[k]); len(f) > 0 {
			v, _ := strconv.ParseFloat(f[0], 64)
			return v
		}
		return 0
	}
	cb.Version = info["brokerVersionDesc"]
	if boot := num("bootTimestamp"); boot > 0 {
		cb.UptimeMs = now.Sub(time.UnixMilli(boot)).Milliseconds()
	}
	cb.InTPS, cb.OutTPS, cb.TimerBacklog = tps("putTps"), tps("getTransferredTps"), num("timerOffsetBehind")
	cb.Role = admin.Role(info, cb.BrokerID)
	cb.Fenced = info["haFenced"] == "true"
	cb.Epoch, cb.ConfirmedOffset = num("haEpoch"), num("haConfirmedOffset")
	for _, id := range strings.FieldsFunc(info["haSyncStateSet"], func(r rune) bool { return r == ',' || r == ' ' || r == '[' || r == ']' }) {
		if n, err := strconv.ParseInt(id, 10, 64); err == nil {
			cb.SyncStateSet = append(cb.SyncStateSet, n)
		}
	}
}

package mqclient

import (
	"encoding/json"
	"sync"
	"time"

	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// heartbeatData is the HEART_BEAT (34) body.
type heartbeatData struct {
	ClientID        string         `json:"clientID"`
	ProducerDataSet []producerData `json:"producerDataSet"`
	ConsumerDataSet []struct{}     `json:"consumerDataSet"`
}

// producerData names one producer group in a heartbeat.
type producerData struct {
	GroupName string `json:"groupName"`
}

// heartbeatBody returns the heartbeat body, or nil when no group is
// registered (RocketMQ clients then send none).
func (i *Instance) heartbeatBody() []byte {
	groups := i.producerGroups()
	if len(groups) == 0 {
		return nil
	}
	hb := heartbeatData{ClientID: i.id, ConsumerDataSet: []struct{}{}}
	for _, g := range groups {
		hb.ProducerDataSet = append(hb.ProducerDataSet, producerData{GroupName: g})
	}
	body, err := json.Marshal(hb)
	if err != nil { // cannot happen: plain strings
		i.log.Error().Err(err).Msg("encode heartbeat")
		return nil
	}
	return body
}

// heartbeatLoop sends heartbeats every HeartbeatInterval.
func (i *Instance) heartbeatLoop() {
	tick := time.NewTicker(i.cfg.HeartbeatInterval)
	defer tick.Stop()
	for {
		select {
		case <-i.ctx.Done():
			return
		case <-tick.C:
			i.heartbeatAll()
		}
	}
}

// heartbeatAll sends a heartbeat to the master of every cached route,
// connecting where needed (each within DialTimeout).
func (i *Instance) heartbeatAll() {
	for addr := range i.masterAddrs() {
		if i.ctx.Err() != nil {
			return
		}
		c, err := i.Conn(i.ctx, addr)
		if err != nil {
			i.log.Warn().Err(err).Str("remote", addr).Msg("heartbeat: broker unreachable")
			continue
		}
		i.sendHeartbeat(c)
	}
}

// sendHeartbeat sends one heartbeat on c without waiting for the answer;
// a failure is logged.
func (i *Instance) sendHeartbeat(c *remoting.Client) {
	body := i.heartbeatBody()
	if body == nil {
		return
	}
	req := i.NewRequest(remoting.HeartBeat, nil, body)
	err := c.Go(req, DefaultHeartbeatTimeout, func(resp *remoting.Command, err error) {
		switch {
		case err != nil:
			i.log.Warn().Err(err).Str("remote", c.Addr()).Msg("heartbeat failed")
		case resp.Code != remoting.Success:
			i.log.Warn().Int32("code", resp.Code).Str("remark", resp.Remark).Str("remote", c.Addr()).Msg("heartbeat refused")
		}
	})
	if err != nil {
		i.log.Warn().Err(err).Str("remote", c.Addr()).Msg("heartbeat not sent")
	}
}

// unregister sends UNREGISTER_CLIENT for a producer group to every
// connected broker and waits for the answers (or their deadline,
// DefaultHeartbeatTimeout).
func (i *Instance) unregister(group string) {
	var wg sync.WaitGroup
	for addr, c := range i.conns.connected() {
		if i.isNameServer(addr) {
			continue
		}
		req := i.NewRequest(remoting.UnregisterClient, map[string]string{"clientID": i.id, "producerGroup": group}, nil)
		wg.Add(1)
		if err := c.Go(req, DefaultHeartbeatTimeout, func(*remoting.Command, error) { wg.Done() }); err != nil {
			wg.Done()
		}
	}
	wg.Wait() // bounded: every request has its own deadline
}

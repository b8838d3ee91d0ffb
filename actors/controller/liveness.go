package controller

import (
	"sort"
	"time"
)

// member is one broker's liveness, as the leader sees its heartbeats.
type member struct {
	conn                        uint64
	lastSeen                    time.Time
	dead                        bool // its heartbeat connection closed
	epoch, maxOffset, confirmed int64
}

// liveness is the leader's table of broker heartbeats: group key -> replica
// id -> member. It lives only on the leader and only on its stage, which rebuilds it
// on every (re)start.
type liveness struct {
	lease       time.Duration
	groups      map[string]map[int64]*member
	leader      bool      // this node was leader at the last scan
	leaderSince time.Time // when it became leader: everyone's fresh lease
	peerAddr    string    // the remoting address last announced
	electing    map[string]bool
}

func newLiveness(lease time.Duration) *liveness {
	return &liveness{lease: lease, groups: map[string]map[int64]*member{}, electing: map[string]bool{}}
}

// beat records a heartbeat of replica id in group key over conn.
func (l *liveness) beat(key string, id int64, conn uint64, now time.Time, h Heartbeat) {
	g := l.groups[key]
	if g == nil {
		g = map[int64]*member{}
		l.groups[key] = g
	}
	g[id] = &member{conn: conn, lastSeen: now, epoch: h.Epoch, maxOffset: h.MaxOffset, confirmed: h.Confirmed}
}

// alive reports whether a member is alive at now: seen within the lease
// over a connection still open. present is false for a member that never
// heartbeated this leader.
func (l *liveness) alive(key string, id int64, now time.Time) (alive, present bool) {
	m := l.groups[key][id]
	if m == nil {
		return false, false
	}
	return !m.dead && now.Sub(m.lastSeen) < l.lease, true
}

// candidates are the alive members of a group, by id.
func (l *liveness) candidates(key string, now time.Time) []Candidate {
	var out []Candidate
	for id, m := range l.groups[key] {
		if !m.dead && now.Sub(m.lastSeen) < l.lease {
			out = append(out, Candidate{ID: id, Epoch: m.epoch, MaxOffset: m.maxOffset})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// connClosed marks every member of conn dead; it reports the groups hit.
func (l *liveness) connClosed(conn uint64) []string {
	var keys []string
	for key, g := range l.groups {
		for _, m := range g {
			if m.conn == conn && conn != 0 && !m.dead {
				m.dead = true
				keys = append(keys, key)
			}
		}
	}
	return keys
}

// connClosed runs on the stage: members of conn die, dead masters are
// replaced at once.
func (c *Controller) connClosed(conn uint64) {
	keys := c.live.connClosed(conn)
	if len(keys) > 0 && c.live.leader {
		c.cfg.Logger.Info().Uint64("conn", conn).Strs("groups", keys).Msg("controller: broker heartbeat connection closed")
		c.checkMasters(c.cfg.Now())
	}
}

// scan runs on the stage every ScanInterval: it follows leadership and
// replaces masters whose lease ran out.
func (c *Controller) scan() {
	now := c.cfg.Now()
	leader := c.IsLeader()
	l := c.live
	if leader != l.leader {
		l.leader = leader
		l.groups = map[string]map[int64]*member{}
		l.electing = map[string]bool{}
		l.peerAddr = ""
		if leader {
			// Every broker gets a fresh lease from now: a master absent
			// from the (empty) table is presumed alive until
			// leaderSince+lease, so a controller failover kills nobody.
			l.leaderSince = now
			c.cfg.Logger.Info().Str("id", string(c.node.selfID)).Msg("controller: became leader")
		} else {
			c.cfg.Logger.Info().Str("id", string(c.node.selfID)).Msg("controller: not the leader any more")
		}
	}
	if !leader {
		return
	}
	c.announce()
	c.checkMasters(now)
}

// announce records this leader's remoting address in the replicated peer
// table (once per leadership, again when it changes).
func (c *Controller) announce() {
	if c.cfg.RemotingAddr == nil {
		return
	}
	addr := c.cfg.RemotingAddr()
	if addr == "" || addr == c.live.peerAddr {
		return
	}
	var known string
	c.fsm.View(func(s *State) { known = s.Peers[string(c.node.selfID)] })
	c.live.peerAddr = addr
	if known == addr {
		return
	}
	c.apply(Command{Op: OpPeer, PeerID: string(c.node.selfID), PeerAddr: addr}, nil, func(_ Result, err error) {
		if err != nil {
			c.live.peerAddr = ""
			c.cfg.Logger.Warn().Err(err).Msg("controller: announce leader address failed")
		}
	})
}

// checkMasters proposes an election for every group whose master is dead
// (or which has none while a member of its sync-state set is alive).
func (c *Controller) checkMasters(now time.Time) {
	var groups []Group
	c.fsm.View(func(s *State) {
		for _, g := range s.Groups {
			groups = append(groups, g.clone())
		}
	})
	grace := now.Sub(c.live.leaderSince) < c.live.lease
	for _, g := range groups {
		key := groupKey(g.Cluster, g.BrokerName)
		if c.live.electing[key] {
			continue
		}
		cands := c.live.candidates(key, now)
		if g.MasterID != 0 {
			alive, present := c.live.alive(key, g.MasterID, now)
			if alive || (!present && grace) {
				continue
			}
		} else if !anyIn(cands, g.SyncStateSet) {
			continue
		}
		c.live.electing[key] = true
		oldMaster, oldEpoch := g.MasterID, g.MasterEpoch
		c.apply(Command{Op: OpElect, Cluster: g.Cluster, BrokerName: g.BrokerName, Alive: cands}, nil, func(r Result, err error) {
			delete(c.live.electing, key)
			ev := c.cfg.Logger.Warn().Str("cluster", g.Cluster).Str("brokerName", g.BrokerName).
				Int64("oldMaster", oldMaster).Int64("oldEpoch", oldEpoch)
			switch {
			case err != nil:
				ev.Err(err).Msg("controller: election not applied")
			case r.Code != 0:
				ev.Int32("code", r.Code).Str("remark", r.Remark).Int64("epoch", r.Group.MasterEpoch).Msg("controller: no master elected")
			default:
				ev.Int64("master", r.Group.MasterID).Int64("epoch", r.Group.MasterEpoch).
					Ints64("syncStateSet", r.Group.SyncStateSet).Msg("controller: master elected")
			}
		})
	}
}

func anyIn(cands []Candidate, set []int64) bool {
	for _, c := range cands {
		for _, id := range set {
			if c.ID == id {
				return true
			}
		}
	}
	return false
}

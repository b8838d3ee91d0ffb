package broker

// A promoted replica's lite topics. A replica does not index the lite
// messages the master streams to it (its lite state is what it had when it
// started); when it becomes master, the lite messages its CommitLog
// gained since its last scan are indexed before any lite call is served,
// as a restart would index them (OpenLite): the first lite call after the
// promotion (a send's indexing, a receive, an ack, a subscription) scans
// them, holding the lite state, so a lite topic's messages stay in
// CommitLog order (a new send is indexed after the ones the scan finds).
// The scan applies the old master's lite ack journal records too
// (liteack.go), in CommitLog order, so what its consumers acknowledged is
// not delivered again.

import (
	"time"

	"github.com/wheelmq/wheelmq/actors/role"
)

// litePromotedLocked indexes the lite messages stored since the last scan
// when this broker serves as master under an epoch it has not scanned for
// (nothing on a standalone broker, a replica, or a master that scanned).
// mu held.
func (b *Broker) litePromotedLocked() {
	s := &b.lite
	st := b.p.Role().Get()
	if st.Kind == role.Replica || st.Epoch == s.epoch {
		return
	}
	began := time.Now()
	from := s.scanned
	n, end, err := b.catchUpLocked(from, -1)
	if err != nil {
		// Indexed what could be read; the next lite call tries the rest.
		b.log.Error().Err(err).Int64("from", from).Msg("lite topics: catching up after the promotion failed")
		return
	}
	s.scanned, s.epoch = end, st.Epoch
	b.log.Info().Int64("epoch", st.Epoch).Int("indexed", n).Int64("from", from).Int64("to", end).
		Dur("took", time.Since(began)).Msg("lite topics: caught up with the CommitLog after the promotion")
}

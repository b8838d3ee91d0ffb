package member

import (
	"time"

	"github.com/wheelmq/wheelmq/actors/recovery"
)

// supervise runs loop (the heartbeats, the fence watch) on a goroutine the
// Member owns: Stop ends it and waits for it. A panic in loop is logged
// with the stack, counted (Panics) and the loop restarts after one
// heartbeat interval, until Stop. While the heartbeat loop is down its
// master lease is not renewed, so the fence watch fences a master as if
// the controller were out of reach: a panic never leaves an unfenced
// master without a lease.
func (m *Member) supervise(kind string, loop func()) {
	recovery.Go(&m.wg, nil, func() {
		for {
			p := recovery.Catch(loop)
			if p == nil {
				return // the loop returned: Stop
			}
			m.panics.Add(1)
			recovery.Log(m.o.Logger, p, "controller member "+kind)
			select {
			case <-m.stop:
				return
			case <-time.After(m.o.HeartbeatInterval):
			}
		}
	})
}

// Panics is the number of panics the member's loops recovered from.
func (m *Member) Panics() int64 { return m.panics.Load() }

package timer

import (
	"strconv"
	"strings"
	"time"
)

// Late cancels on a replica (docs/timer.md, "Roles"). A replica that
// receives a timer and its cancel only after their due time (it was down,
// or far behind) may release the target before its wheel holds the
// cancel; the master, which had the cancel in time, writes no copy. The
// copy scan therefore also notes every confirmed cancel by its target's
// identity: a shadow batch waiting for that target stops waiting, and a
// promoted replica does not write it back. The notes live apart from the
// copies (replayed): they do not hold timer_replay_from back (a cancel the
// wheel applied itself would never be claimed), are kept across rewinds
// (the rescan after a promotion may start past them), are cut with the
// log, and expire an hour after their target was due.

// cancelExpiry is how long after its target's due time a noted cancel is
// kept.
const cancelExpiry = time.Hour

// cancelSeen is a confirmed cancel: where it lies and its target's due
// time (Unix ms).
type cancelSeen struct{ off, dueMs int64 }

// sawCancel notes a confirmed cancel of the timer id found at off and
// ends the wait of a shadow batch for it.
func (d *dequeuePut) sawCancel(id string, off int64) {
	if d.cancels == nil {
		d.cancels = map[string]cancelSeen{}
	}
	due, _ := strconv.ParseInt(id[strings.LastIndexByte(id, '@')+1:], 10, 64)
	d.cancels[id] = cancelSeen{off: off, dueMs: due}
	if p, ok := d.awaiting[id]; ok {
		delete(d.awaiting, id)
		p.waiting--
	}
	if len(d.cancels)%1024 == 0 {
		d.expireCancels(time.Now().Add(-cancelExpiry).UnixMilli())
	}
}

// cancelled reports whether a confirmed cancel ended timer id.
func (d *dequeuePut) cancelled(id string) bool {
	_, ok := d.cancels[id]
	return ok
}

// expireCancels drops the notes of cancels whose target was due before
// beforeMs.
func (d *dequeuePut) expireCancels(beforeMs int64) {
	for id, c := range d.cancels {
		if c.dueMs < beforeMs {
			delete(d.cancels, id)
		}
	}
}

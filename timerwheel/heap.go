package timerwheel

import (
	"slices"

	"github.com/wheelmq/wheelmq/timerwheel/timerlog"
)

// readyHeap holds the records of loaded near slots that Due has not
// released yet, ordered by (EffMs, Seq). It only ever holds the slots being
// drained, never the pending timers at large.
type readyHeap struct {
	recs []timerlog.Record
}

func less(a, b *timerlog.Record) bool {
	return a.EffMs < b.EffMs || a.EffMs == b.EffMs && a.Seq < b.Seq
}

// Len is the number of records held.
func (h *readyHeap) Len() int { return len(h.recs) }

func (h *readyHeap) top() *timerlog.Record { return &h.recs[0] }
func (h *readyHeap) reset()                { clear(h.recs); h.recs = h.recs[:0] }

// grow makes room for n more records at once (a slot group being loaded).
func (h *readyHeap) grow(n int) { h.recs = slices.Grow(h.recs, n) }

func (h *readyHeap) push(r timerlog.Record) {
	h.recs = append(h.recs, r)
	i := len(h.recs) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !less(&h.recs[i], &h.recs[p]) {
			break
		}
		h.recs[i], h.recs[p] = h.recs[p], h.recs[i]
		i = p
	}
}

func (h *readyHeap) pop() timerlog.Record {
	r := h.recs[0]
	n := len(h.recs) - 1
	h.recs[0] = h.recs[n]
	h.recs = h.recs[:n]
	for i := 0; ; {
		l, m := 2*i+1, i
		if l < n && less(&h.recs[l], &h.recs[m]) {
			m = l
		}
		if l+1 < n && less(&h.recs[l+1], &h.recs[m]) {
			m = l + 1
		}
		if m == i {
			break
		}
		h.recs[i], h.recs[m] = h.recs[m], h.recs[i]
		i = m
	}
	if n == 0 && cap(h.recs) > 1<<16 {
		h.recs = nil // give a burst's memory back
	}
	return r
}

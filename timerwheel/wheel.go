package timerwheel

import (
	"math"
	"math/bits"

	"github.com/wheelmq/wheelmq/timerwheel/timerlog"
)

// slot is the in-memory head of one wheel slot: the newest record of a
// chain that continues through each record's prev pointer in the TimerLog.
// A slot with head 0 is empty whatever its other fields say.
type slot struct {
	no    int64  // absolute slot (near) or bucket (far) number
	head  uint64 // newest record
	first uint64 // oldest record (pins the TimerLog segment holding it)
	n, nc uint32 // normal and cancel records in the chain
	// minCL is at or below the lowest CommitLog offset a normal record of
	// the chain refers to (noCL: none). Records cut off the chain by a
	// relink do not raise it: it stays a conservative bound.
	minCL int64
}

// noCL is slot.minCL of a chain without normal records.
const noCL = math.MaxInt64

func (s *slot) empty() bool { return s.head == 0 }

// noteCL lowers the slot's minCL for a record linked into it.
func (s *slot) noteCL(r *timerlog.Record) {
	if r.Kind == timerlog.KindNormal && r.CLOffset >= 0 {
		s.minCL = min(s.minCL, r.CLOffset)
	}
}

const noSlot = math.MinInt64

// ring is a wheel: slot number no lives at index no mod len(slots), so a
// ring of N slots holds any N consecutive slot numbers. Two bitmaps index
// it: ahead marks slots whose records are still ahead (not yet loaded in
// the near wheel, not yet relinked in the far wheel), occ marks every slot
// holding records. Both let scans skip empty stretches 64 slots at a time.
type ring struct {
	slots []slot
	ahead []uint64
	occ   []uint64
}

func newRing(n int64) ring {
	r := ring{slots: make([]slot, n), ahead: make([]uint64, (n+63)/64), occ: make([]uint64, (n+63)/64)}
	for i := range r.slots {
		r.slots[i].no = noSlot
	}
	return r
}

func (r *ring) idx(no int64) int64 {
	i := no % int64(len(r.slots))
	if i < 0 {
		i += int64(len(r.slots))
	}
	return i
}

// at returns slot no when it holds records, else nil.
func (r *ring) at(no int64) *slot {
	s := &r.slots[r.idx(no)]
	if s.no != no || s.empty() {
		return nil
	}
	return s
}

func setBit(b []uint64, i int64)   { b[i>>6] |= 1 << (i & 63) }
func clearBit(b []uint64, i int64) { b[i>>6] &^= 1 << (i & 63) }

func (r *ring) mark(no int64)        { setBit(r.ahead, r.idx(no)) }
func (r *ring) unmark(no int64)      { clearBit(r.ahead, r.idx(no)) }
func (r *ring) marked(no int64) bool { i := r.idx(no); return r.ahead[i>>6]&(1<<(i&63)) != 0 }

// clearSlot empties the slot at ring index i.
func (r *ring) clearSlot(i int64) {
	r.slots[i] = slot{no: noSlot}
	clearBit(r.ahead, i)
	clearBit(r.occ, i)
}

// rebuildOcc recomputes occ from the slots.
func (r *ring) rebuildOcc() {
	clear(r.occ)
	for i := range r.slots {
		if !r.slots[i].empty() {
			setBit(r.occ, int64(i))
		}
	}
}

// nextMarked returns the smallest slot number in [from, limit) marked in
// ahead, looking at most one lap ahead.
func (r *ring) nextMarked(from, limit int64) (int64, bool) { return r.next(r.ahead, from, limit) }

// nextOcc is nextMarked for occ.
func (r *ring) nextOcc(from, limit int64) (int64, bool) { return r.next(r.occ, from, limit) }

func (r *ring) next(bm []uint64, from, limit int64) (int64, bool) {
	n := int64(len(r.slots))
	span := min(limit-from, n)
	start := r.idx(from)
	for d := int64(0); d < span; {
		i := start + d
		if i >= n {
			i -= n
		}
		w := bm[i>>6] >> (i & 63)
		if w == 0 {
			step := 64 - (i & 63)
			if i+step > n {
				step = n - i
			}
			d += step
			continue
		}
		d += int64(bits.TrailingZeros64(w))
		if d >= span {
			break
		}
		no := from + d
		if r.slots[r.idx(no)].no == no {
			return no, true
		}
		d++ // a slot of another lap
	}
	return 0, false
}

// floorDiv divides rounding toward minus infinity.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// satSub returns a-b clamped at the int64 range.
func satSub(a, b int64) int64 {
	if b > 0 && a < math.MinInt64+b {
		return math.MinInt64
	}
	return a - b
}

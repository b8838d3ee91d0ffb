package storage

import (
	"cmp"
	"encoding/binary"
	"errors"
	"slices"

	"github.com/wheelmq/wheelmq/storage/commitlog"
	"github.com/wheelmq/wheelmq/storage/consumequeue"
)

// maxRunBytes bounds one coalesced CommitLog read.
const maxRunBytes = 1 << 20

// entryOverhead is the CommitLog's per-record trailer (CRC32C).
const entryOverhead = commitlog.EntryOverhead

// UnitState is what reading a consume-queue unit's record found.
type UnitState uint8

const (
	// UnitOK: the record was read and verified.
	UnitOK UnitState = iota
	// UnitHole: a hole unit, whose record was lost to CommitLog damage;
	// readers skip it.
	UnitHole
	// UnitRecordDamaged: the unit leads to a record header of its size, but
	// the record's bytes do not verify: the message is damaged. Readers skip
	// it (PolicySkip) or stop at it (PolicyStop).
	UnitRecordDamaged
	// UnitDamaged: the unit does not lead to a record of its size (its
	// bytes are damaged, or it points past the log): the consume queue must
	// be rebuilt from the CommitLog (Store.ReportDamagedUnit).
	UnitDamaged
	// UnitUnreadable: an I/O error, or the record lies below the log's start.
	UnitUnreadable
)

// String names the state.
func (s UnitState) String() string {
	switch s {
	case UnitOK:
		return "ok"
	case UnitHole:
		return "hole"
	case UnitRecordDamaged:
		return "record_damaged"
	case UnitDamaged:
		return "unit_damaged"
	default:
		return "unreadable"
	}
}

// ReadUnits reads the records of units (in any order), coalescing records
// that follow each other in the CommitLog into one read: timer messages sent
// together sit back to back. out[i] is units[i]'s record, nil when it cannot
// be read (holes included).
func ReadUnits(cl *commitlog.CommitLog, units []consumequeue.Unit) [][]byte {
	out, _ := ReadUnitsChecked(cl, units)
	return out
}

// ReadUnitsChecked is ReadUnits that also says, per unit, why a record is
// missing. The records are read into one buffer for the whole call (they
// alias it): no allocation per record.
func ReadUnitsChecked(cl *commitlog.CommitLog, units []consumequeue.Unit) ([][]byte, []UnitState) {
	var r UnitReader
	return r.ReadChecked(cl, units)
}

// UnitReader is ReadUnits with buffers kept from call to call, for a reader
// that handles one batch at a time: what a call returns (the records and
// the slices) stays valid until the next call. The zero value is ready.
type UnitReader struct {
	buf    []byte
	out    [][]byte
	states []UnitState
	order  []int
}

// Read is ReadUnits into r's buffers.
func (r *UnitReader) Read(cl *commitlog.CommitLog, units []consumequeue.Unit) [][]byte {
	out, _ := r.ReadChecked(cl, units)
	return out
}

// ReadChecked is ReadUnitsChecked into r's buffers.
func (r *UnitReader) ReadChecked(cl *commitlog.CommitLog, units []consumequeue.Unit) ([][]byte, []UnitState) {
	out := reuse(r.out, len(units))
	states := reuse(r.states, len(units))
	order := r.order[:0]
	total := 0
	for i, u := range units {
		if u.IsHole() {
			states[i] = UnitHole
			continue
		}
		order = append(order, i)
		total += int(u.Size) + entryOverhead
	}
	slices.SortFunc(order, func(a, b int) int { return cmp.Compare(units[a].Offset, units[b].Offset) })
	// Room for every entry with its trailer: AppendEntries never grows it,
	// so the records handed out stay where they are.
	buf := r.buf[:0]
	if cap(buf) < total {
		buf = make([]byte, 0, total)
	}
	r.out, r.states, r.order, r.buf = out, states, order, buf
	for i := 0; i < len(order); {
		first := units[order[i]]
		j, end := i+1, first.Offset+int64(first.Size)+entryOverhead
		for j < len(order) && units[order[j]].Offset == end && end-first.Offset < maxRunBytes {
			end += int64(units[order[j]].Size) + entryOverhead
			j++
		}
		if j-i > 1 {
			start := len(buf)
			got, n, err := cl.AppendEntries(buf, first.Offset, end-first.Offset)
			if err == nil && n == j-i && runSizesMatch(got[start:], units, order[i:j]) {
				at := start
				for _, idx := range order[i:j] {
					size := int(units[idx].Size)
					out[idx] = got[at : at+size : at+size]
					at += size
				}
				buf, i = got, j
				continue
			}
		}
		for _, idx := range order[i:j] { // one by one
			u := units[idx]
			start := len(buf)
			got, _, err := cl.AppendEntries(buf, u.Offset, int64(u.Size)+entryOverhead)
			if err != nil {
				states[idx] = classify(cl, u, err)
				continue
			}
			out[idx], buf = got[start:len(got):len(got)], got
		}
		i = j
	}
	return out, states
}

// runSizesMatch reports whether the records back to back in b have the
// sizes of units[idx] for idx in order.
func runSizesMatch(b []byte, units []consumequeue.Unit, order []int) bool {
	for _, idx := range order {
		size := units[idx].Size
		if len(b) < int(size) || int32(binary.BigEndian.Uint32(b)) != size {
			return false
		}
		b = b[size:]
	}
	return len(b) == 0
}

// classify says why the record of u could not be read (err from ReadAt or
// AppendEntries).
func classify(cl *commitlog.CommitLog, u consumequeue.Unit, err error) UnitState {
	switch {
	case u.Offset < cl.MinOffset():
		return UnitUnreadable
	case errors.Is(err, commitlog.ErrOutOfRange):
		return UnitDamaged // past the log's end, or across a segment end
	case !errors.Is(err, commitlog.ErrCorrupt):
		return UnitUnreadable
	}
	size, isRecord, herr := cl.Header(u.Offset)
	switch {
	case herr != nil && !errors.Is(herr, commitlog.ErrCorrupt):
		return UnitUnreadable
	case herr == nil && isRecord && size == u.Size:
		return UnitRecordDamaged
	default:
		return UnitDamaged
	}
}

// AppendRecords appends the records of units to dst, back to back as a pull
// answers them. units are in consume-queue order (increasing CommitLog
// offsets) and hold no holes. Each run of records adjacent in the CommitLog
// (up to 1 MiB) is read with one read straight into dst's spare capacity
// (commitlog.AppendEntries): with room for the records plus 4 bytes per
// record, nothing is allocated. It returns the extended dst and how many
// units it appended; fewer than len(units) means units[n] could not be read
// (ReadUnitsChecked says why), and dst holds the records of units[:n].
func AppendRecords(cl *commitlog.CommitLog, dst []byte, units []consumequeue.Unit) ([]byte, int) {
	done := 0
	for done < len(units) {
		first := units[done]
		j, end := done+1, first.Offset+int64(first.Size)+entryOverhead
		for j < len(units) && units[j].Offset == end && end-first.Offset < maxRunBytes {
			end += int64(units[j].Size) + entryOverhead
			j++
		}
		start := len(dst)
		out, n, err := cl.AppendEntries(dst, first.Offset, end-first.Offset)
		if err == nil && n == j-done && sizesMatch(out[start:], units[done:j]) {
			dst, done = out, j
			continue
		}
		dst = out[:start]
		for ; done < j; done++ { // one by one, to find the first unreadable
			u := units[done]
			out, _, err := cl.AppendEntries(dst, u.Offset, int64(u.Size)+entryOverhead)
			if err != nil {
				return dst, done
			}
			dst = out
		}
	}
	return dst, done
}

// reuse returns s resized to n zero values, reusing its array when it is
// large enough.
func reuse[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	s = s[:n]
	clear(s)
	return s
}

// sizesMatch reports whether the records back to back in b have the sizes
// of units, in order.
func sizesMatch(b []byte, units []consumequeue.Unit) bool {
	for _, u := range units {
		if len(b) < int(u.Size) || int32(binary.BigEndian.Uint32(b)) != u.Size {
			return false
		}
		b = b[u.Size:]
	}
	return len(b) == 0
}

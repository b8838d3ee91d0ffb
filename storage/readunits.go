package storage

import (
	"sort"

	"github.com/wheelmq/wheelmq/storage/commitlog"
	"github.com/wheelmq/wheelmq/storage/consumequeue"
)

// maxRunBytes bounds one coalesced CommitLog read.
const maxRunBytes = 1 << 20

// entryOverhead is the CommitLog's per-record trailer (CRC32C).
const entryOverhead = 4

// ReadUnits reads the records of units (in any order), coalescing records
// that follow each other in the CommitLog into one read: timer messages sent
// together sit back to back. out[i] is units[i]'s record, nil when it cannot
// be read.
func ReadUnits(cl *commitlog.CommitLog, units []consumequeue.Unit) [][]byte {
	out := make([][]byte, len(units))
	order := make([]int, len(units))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool { return units[order[a]].Offset < units[order[b]].Offset })
	for i := 0; i < len(order); {
		first := units[order[i]]
		j, end := i+1, first.Offset+int64(first.Size)+entryOverhead
		for j < len(order) && units[order[j]].Offset == end && end-first.Offset < maxRunBytes {
			end += int64(units[order[j]].Size) + entryOverhead
			j++
		}
		if j-i > 1 {
			recs, offs, _, err := cl.ReadBlock(first.Offset, int(end-first.Offset))
			if err == nil {
				at := make(map[int64][]byte, len(recs))
				for k, r := range recs {
					at[offs[k]] = r
				}
				for k := i; k < j; k++ {
					u := units[order[k]]
					if r, ok := at[u.Offset]; ok && len(r) == int(u.Size) {
						out[order[k]] = r
					}
				}
			}
		}
		for k := i; k < j; k++ {
			idx := order[k]
			if out[idx] == nil {
				if r, err := cl.ReadAt(units[idx].Offset, units[idx].Size); err == nil {
					out[idx] = r
				}
			}
		}
		i = j
	}
	return out
}

package timer

import (
	"github.com/wheelmq/wheelmq/storage/commitlog"
	"github.com/wheelmq/wheelmq/storage/consumequeue"
)

// maxRunBytes bounds one coalesced CommitLog read.
const maxRunBytes = 1 << 20

// entryOverhead is the CommitLog's per-record trailer (CRC32C).
const entryOverhead = 4

// readUnits reads the records of units, coalescing units that follow each
// other in the CommitLog into one read (timer messages sent in a burst sit
// back to back). A record that cannot be read is nil.
func readUnits(cl *commitlog.CommitLog, units []consumequeue.Unit) [][]byte {
	out := make([][]byte, len(units))
	for i := 0; i < len(units); {
		j, end := i+1, units[i].Offset+int64(units[i].Size)+entryOverhead
		for j < len(units) && units[j].Offset == end && end-units[i].Offset < maxRunBytes {
			end += int64(units[j].Size) + entryOverhead
			j++
		}
		if j-i > 1 {
			recs, offs, _, err := cl.ReadBlock(units[i].Offset, int(end-units[i].Offset))
			if err == nil {
				at := map[int64][]byte{}
				for k, r := range recs {
					at[offs[k]] = r
				}
				for k := i; k < j; k++ {
					if r, ok := at[units[k].Offset]; ok && len(r) == int(units[k].Size) {
						out[k] = r
					}
				}
			}
		}
		for k := i; k < j; k++ {
			if out[k] == nil {
				if r, err := cl.ReadAt(units[k].Offset, units[k].Size); err == nil {
					out[k] = r
				}
			}
		}
		i = j
	}
	return out
}

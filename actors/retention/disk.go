package retention

import (
	"fmt"
	"math"
	"sync/atomic"
	"syscall"
)

// Disk is the data directory's disk use as last sampled by the retention
// stage, read without a syscall by the request router: past the full ratio
// sends are refused. The zero value reads as empty and not full.
type Disk struct {
	ratio atomic.Uint64 // math.Float64bits of the used ratio
	full  atomic.Bool
}

// Ratio is the last sampled used ratio in [0, 1].
func (d *Disk) Ratio() float64 { return math.Float64frombits(d.ratio.Load()) }

// Full reports whether the last sample was at or above the full ratio.
func (d *Disk) Full() bool { return d.full.Load() }

// set records a sample and reports whether the full state changed.
func (d *Disk) set(ratio float64, full bool) (changed bool) {
	d.ratio.Store(math.Float64bits(ratio))
	return d.full.Swap(full) != full
}

// FullRemark is the remark of a send refused for a full disk, in RocketMQ's
// words (SERVICE_NOT_AVAILABLE, 14). The store has one data directory, so
// the CommitLog, consume-queue and index figures are the same.
func (d *Disk) FullRemark() string {
	r := d.Ratio()
	return fmt.Sprintf("service not available now. It may be caused by one of the following reasons: "+
		"the broker's disk is full [CL: %5.2f CQ: %5.2f INDEX: %5.2f], messages are put to the slave, "+
		"message store has been shut down, etc.", r, r, r)
}

// StatfsUsage returns a sampler of the used ratio of the file system
// holding dir, as RocketMQ computes it: used / (used + available to
// unprivileged users).
func StatfsUsage(dir string) func() (float64, error) {
	return func() (float64, error) {
		var st syscall.Statfs_t
		if err := syscall.Statfs(dir, &st); err != nil {
			return 0, fmt.Errorf("statfs %s: %w", dir, err)
		}
		used := float64(st.Blocks-st.Bfree) * float64(st.Bsize)
		avail := float64(st.Bavail) * float64(st.Bsize)
		if used+avail <= 0 {
			return 0, nil
		}
		return used / (used + avail), nil
	}
}

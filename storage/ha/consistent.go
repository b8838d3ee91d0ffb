package ha

// ConsistentPoint returns the CommitLog offset a replica truncates to
// before following a master: walking the replica's epochs from the newest
// back, the first one the master also has with the same start offset is
// the last epoch both agree on, and the point is the smaller of the two
// ends of that epoch (an epoch ends where the next entry starts; the
// replica's last epoch ends at localMax, the master's last one is open, so
// the caller also caps the result at the master's max offset). It returns
// -1 when they agree on no epoch: the replica keeps nothing (0 when its
// log is empty anyway). This is RocketMQ's rule
// (AutoSwitchHAClient/EpochFileCache.findConsistentPoint).
func ConsistentPoint(local, master []Epoch, localMax int64) int64 {
	for i := len(local) - 1; i >= 0; i-- {
		l := local[i]
		for j := len(master) - 1; j >= 0; j-- {
			m := master[j]
			if m.Epoch != l.Epoch {
				continue
			}
			if m.Start != l.Start {
				break // same epoch, different history: look further back
			}
			end := localMax
			if i+1 < len(local) {
				end = min(end, local[i+1].Start)
			}
			if j+1 < len(master) {
				end = min(end, master[j+1].Start)
			}
			return end
		}
	}
	if localMax == 0 {
		return 0
	}
	return -1
}

package adminbody

import "math"

// OpenEnd is an EpochEntry's endOffset while its epoch is the newest (Java's
// Long.MAX_VALUE).
const OpenEnd = math.MaxInt64

// EpochEntry is one master epoch of a replicated broker's CommitLog: its
// master wrote the bytes from StartOffset up to EndOffset (exclusive).
type EpochEntry struct {
	EndOffset   int64 `json:"endOffset"`
	Epoch       int64 `json:"epoch"`
	StartOffset int64 `json:"startOffset"`
}

// EpochEntryCache is GET_BROKER_EPOCH_CACHE's (1007) answer body as a
// RocketMQ 5 broker writes it (AdminBrokerProcessor.getBrokerEpochCache):
// the broker's identity, its epoch list oldest first and its CommitLog's
// end (getMaxPhyOffset).
type EpochEntryCache struct {
	BrokerID    int64        `json:"brokerId"`
	BrokerName  string       `json:"brokerName"`
	ClusterName string       `json:"clusterName"`
	EpochList   []EpochEntry `json:"epochList"`
	MaxOffset   int64        `json:"maxOffset"`
}

// EpochList turns (epoch, start) pairs, oldest first, into entries whose
// endOffset is the next entry's start, the newest one open (OpenEnd), as
// RocketMQ's EpochFileCache lists them.
func EpochList(epochs, starts []int64) []EpochEntry {
	out := make([]EpochEntry, len(epochs))
	for i := range epochs {
		end := int64(OpenEnd)
		if i+1 < len(starts) {
			end = starts[i+1]
		}
		out[i] = EpochEntry{Epoch: epochs[i], StartOffset: starts[i], EndOffset: end}
	}
	return out
}

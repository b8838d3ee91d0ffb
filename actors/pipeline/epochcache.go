package pipeline

import "github.com/wheelmq/wheelmq/storage/ha"

// EpochLister is an EpochLog that also lists its entries (the process's
// adapter of storage/ha.Epochs is one): GET_BROKER_EPOCH_CACHE (1007)
// answers with them.
type EpochLister interface {
	Entries() []ha.Epoch
}

// EpochEntries returns the epoch file's entries, oldest first. ok is false
// when the broker is not replicated (controller mode off) or its
// replication keeps no listable epoch file.
func (p *Pipeline) EpochEntries() (entries []ha.Epoch, ok bool) {
	if !p.replicated() || p.repl == nil {
		return nil, false
	}
	l, isLister := p.repl.Epochs.(EpochLister)
	if !isLister {
		return nil, false
	}
	return l.Entries(), true
}

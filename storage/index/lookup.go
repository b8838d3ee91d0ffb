package index

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"slices"
)

// Lookup returns the records indexed under topic and key whose store
// timestamp lies in [begin, end], at most max of them (the newest ones),
// sorted by CommitLog offset. It sees flushed entries. Keys are matched by
// their 64-bit hash: callers that must be exact check the records. A file
// that cannot be read is skipped and reported in err alongside the hits
// from the others.
func (ix *Index) Lookup(topic, key string, begin, end int64, max int) ([]Hit, error) {
	if ix.closed {
		return nil, ErrClosed
	}
	hash := KeyHash(topic, key)
	var (
		hits   []Hit
		errs   []error
		budget = ix.opts.MaxScan
	)
	for i := len(ix.files) - 1; i >= 0 && len(hits) < max && budget > 0; i-- {
		fl := ix.files[i]
		if fl.count == 0 || fl.maxTS < begin || fl.minTS > end {
			continue
		}
		var err error
		hits, budget, err = ix.lookupFile(fl, hash, begin, end, max, hits, budget)
		if err != nil {
			errs = append(errs, err)
		}
	}
	slices.SortFunc(hits, func(a, b Hit) int { return cmp.Compare(a.Offset, b.Offset) })
	return hits, errors.Join(errs...)
}

// lookupFile walks one slot chain of fl, newest entry first.
func (ix *Index) lookupFile(fl *file, hash uint64, begin, end int64, max int, hits []Hit, budget int) ([]Hit, int, error) {
	f := fl.f
	if f == nil {
		var err error
		if f, err = ix.fs.OpenFile(fl.path, os.O_RDONLY, 0); err != nil {
			return hits, budget, fmt.Errorf("index lookup %s: %w", fl.path, err)
		}
		defer f.Close()
	}
	n, err := fl.slotHead(f, hash%uint64(fl.h.slots))
	if err != nil {
		return hits, budget, err
	}
	for n != 0 && n <= fl.count && len(hits) < max && budget > 0 {
		budget--
		e, err := fl.readEntry(f, n)
		if err != nil {
			return hits, budget, err
		}
		if e.hash == hash && e.ts >= begin && e.ts <= end && !slices.ContainsFunc(hits, func(h Hit) bool { return h.Offset == e.offset }) {
			hits = append(hits, Hit{Offset: e.offset, StoreTimestamp: e.ts})
		}
		if e.prev >= n {
			break // a link must point back: damaged entry
		}
		n = e.prev
	}
	return hits, budget, nil
}

// Last returns the CommitLog offset and store timestamp of the newest
// flushed entry (RocketMQ's indexLastUpdatePhyoffset and
// indexLastUpdateTimestamp); zeros when the index is empty.
func (ix *Index) Last() (offset, storeTimestamp int64) {
	for i := len(ix.files) - 1; i >= 0; i-- {
		if fl := ix.files[i]; fl.count > 0 {
			return fl.lastOffset, fl.lastTS
		}
	}
	return 0, 0
}

// Stats reports the number of files and entries.
func (ix *Index) Stats() Stats {
	s := Stats{Files: len(ix.files)}
	for _, fl := range ix.files {
		s.Entries += int64(fl.count)
	}
	return s
}

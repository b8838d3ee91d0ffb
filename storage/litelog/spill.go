package litelog

// The spill store: where the broker keeps the lite topics it evicted from
// memory (docs/lite.md, "Memory and files"). Buckets files
// <dir>/NNNN.spill, a lite topic's bucket its name's FNV-1a 64 hash mod
// SpillBuckets; each file is a run of records as Append encodes them
// (no magic): one snapshot per eviction, an Evict record (Offset 0, Ms its
// newest message's time) then its Message records, then one Ack record per
// group position. A lookup reads the lite topic's bucket and takes its
// newest snapshot. The store is a cache of the lite log: the broker wipes
// it at start (the log's replay rebuilds every lite topic), so it is never
// fsynced.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// KindEvict opens a snapshot in a spill bucket (never in the lite log).
const KindEvict Kind = 5

// SpillBuckets is how many bucket files the spill store spreads over.
const SpillBuckets = 4096

// spillRewriteBytes is a bucket's size past which a lookup rewrites it to
// its live snapshots.
const spillRewriteBytes = 1 << 20

// Spill is an open spill store. Not safe for concurrent use: the broker's
// lite writer goroutine is its only user.
type Spill struct {
	dir   string
	sizes [SpillBuckets]int64
}

// Hash is a lite topic's 64-bit FNV-1a hash (its bucket's, and the
// broker's evicted set's key).
func Hash(parent, lite string) uint64 {
	const prime = 1099511628211
	h := uint64(14695981039346656037)
	for i := 0; i < len(parent); i++ {
		h = (h ^ uint64(parent[i])) * prime
	}
	h *= prime // a 0 byte between the names
	for i := 0; i < len(lite); i++ {
		h = (h ^ uint64(lite[i])) * prime
	}
	return h
}

// OpenSpill empties (or creates) the spill store in dir.
func OpenSpill(dir string) (*Spill, error) {
	if err := os.RemoveAll(dir); err != nil {
		return nil, fmt.Errorf("litelog spill: wipe %s: %w", dir, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("litelog spill: %w", err)
	}
	return &Spill{dir: dir}, nil
}

func (s *Spill) path(b int) string { return filepath.Join(s.dir, fmt.Sprintf("%04d.spill", b)) }

// Bucket is the bucket of a lite topic.
func Bucket(parent, lite string) int { return int(Hash(parent, lite) % SpillBuckets) }

// Put appends snapshots (each opening with a KindEvict record of its lite
// topic) to their buckets.
func (s *Spill) Put(snaps [][]Record) error {
	by := map[int][]byte{}
	for _, snap := range snaps {
		if len(snap) == 0 || snap[0].Kind != KindEvict {
			return errors.New("litelog spill: a snapshot opens with an Evict record")
		}
		b := Bucket(snap[0].Parent, snap[0].Lite)
		buf := by[b]
		for i := range snap {
			buf = Append(buf, &snap[i])
		}
		by[b] = buf
	}
	for b, buf := range by {
		if err := s.appendFile(b, buf); err != nil {
			return err
		}
	}
	return nil
}

func (s *Spill) appendFile(b int, buf []byte) error {
	f, err := os.OpenFile(s.path(b), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("litelog spill: %w", err)
	}
	_, err = f.Write(buf)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("litelog spill %s: %w", s.path(b), err)
	}
	s.sizes[b] += int64(len(buf))
	return nil
}

// SpillKey names a lite topic in the spill store.
type SpillKey struct{ Parent, Lite string }

// ReadBucket reads bucket b's newest snapshot of each lite topic live says
// is evicted; when the bucket has grown past its live part it is
// rewritten to them (what live rejects is dropped).
func (s *Spill) ReadBucket(b int, live func(SpillKey) bool) (map[SpillKey][]Record, error) {
	if s.sizes[b] == 0 {
		return nil, nil
	}
	raw, err := os.ReadFile(s.path(b))
	if err != nil {
		return nil, fmt.Errorf("litelog spill: %w", err)
	}
	out := map[SpillKey][]Record{}
	var cur SpillKey
	err = DecodeAll(raw, func(r *Record) {
		if r.Kind == KindEvict {
			cur = SpillKey{r.Parent, r.Lite}
			out[cur] = []Record{*r}
			return
		}
		if k := (SpillKey{r.Parent, r.Lite}); k == cur {
			out[k] = append(out[k], *r)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("litelog spill %s: %w", s.path(b), err)
	}
	var keep []byte
	for k, snap := range out {
		if !live(k) {
			delete(out, k)
			continue
		}
		for i := range snap {
			keep = Append(keep, &snap[i])
		}
	}
	if s.sizes[b] > spillRewriteBytes && int64(len(keep)) < s.sizes[b]/2 {
		if err := s.rewrite(b, keep); err != nil {
			return out, err
		}
	}
	return out, nil
}

// rewrite replaces bucket b by buf (written aside, renamed over it).
func (s *Spill) rewrite(b int, buf []byte) error {
	tmp := s.path(b) + ".tmp"
	if err := os.WriteFile(tmp, buf, 0o644); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("litelog spill rewrite: %w", err)
	}
	if err := os.Rename(tmp, s.path(b)); err != nil {
		return fmt.Errorf("litelog spill rewrite: %w", err)
	}
	s.sizes[b] = int64(len(buf))
	return nil
}

// Size is the store's total length in bytes.
func (s *Spill) Size() int64 {
	var n int64
	for _, v := range s.sizes {
		n += v
	}
	return n
}

// All reads every bucket (ReadBucket) and calls each for every live
// snapshot.
func (s *Spill) All(live func(SpillKey) bool, each func([]Record)) error {
	for b := range SpillBuckets {
		snaps, err := s.ReadBucket(b, live)
		if err != nil {
			return err
		}
		for _, snap := range snaps {
			each(snap)
		}
	}
	return nil
}

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
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
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

// bucket reads bucket b's file: nil (and no error) when it is empty.
func (s *Spill) bucket(b int) ([]byte, error) {
	if s.sizes[b] == 0 {
		return nil, nil
	}
	raw, err := os.ReadFile(s.path(b))
	if err != nil {
		return nil, fmt.Errorf("litelog spill: %w", err)
	}
	return raw, nil
}

// SpillKey names a lite topic in the spill store.
type SpillKey struct{ Parent, Lite string }

// ReadBucket reads bucket b's newest snapshot of each lite topic live says
// is evicted; when the bucket has grown past its live part it is
// rewritten to them (what live rejects is dropped).
func (s *Spill) ReadBucket(b int, live func(SpillKey) bool) (map[SpillKey][]Record, error) {
	raw, err := s.bucket(b)
	if raw == nil {
		return nil, err
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
	var keepLen int64
	for k, snap := range out {
		if !live(k) {
			delete(out, k)
			continue
		}
		for i := range snap {
			keepLen += int64(8 + 17 + 6 + len(snap[i].Parent) + len(snap[i].Lite) + len(snap[i].Group))
		}
	}
	if s.sizes[b] > spillRewriteBytes && keepLen < s.sizes[b]/2 {
		keep := make([]byte, 0, keepLen)
		for _, snap := range out {
			for i := range snap {
				keep = Append(keep, &snap[i])
			}
		}
		if err := s.rewrite(b, keep); err != nil {
			return out, err
		}
	}
	return out, nil
}

// Lookup reads the newest snapshots of the lite topics want accepts from
// bucket b, decoding only theirs (want sees the names as they are stored;
// it must not keep them). A bucket grown past its rewrite size goes
// through ReadBucket with live instead, which rewrites it.
func (s *Spill) Lookup(b int, want func(parent, lite []byte) bool, live func(SpillKey) bool) (map[SpillKey][]Record, error) {
	if s.sizes[b] > spillRewriteBytes {
		snaps, err := s.ReadBucket(b, live)
		for k := range snaps {
			if !want([]byte(k.Parent), []byte(k.Lite)) {
				delete(snaps, k)
			}
		}
		return snaps, err
	}
	raw, err := s.bucket(b)
	if raw == nil {
		return nil, err
	}
	out := map[SpillKey][]Record{}
	var cur SpillKey
	wanted := false
	for p := raw; len(p) > 0; {
		if len(p) < 8 {
			return nil, fmt.Errorf("litelog spill %s: %w: short header", s.path(b), ErrCorrupt)
		}
		n := binary.LittleEndian.Uint32(p)
		if uint64(n) > uint64(len(p)-8) || n < 17+6 {
			return nil, fmt.Errorf("litelog spill %s: %w: bad length %d", s.path(b), ErrCorrupt, n)
		}
		crc, body := binary.LittleEndian.Uint32(p[4:]), p[8:8+n]
		p = p[8+n:]
		parent, lite, ok := names(body)
		if !ok {
			return nil, fmt.Errorf("litelog spill %s: %w", s.path(b), ErrCorrupt)
		}
		if Kind(body[0]) == KindEvict {
			wanted = want(parent, lite)
			if !wanted {
				continue
			}
			cur = SpillKey{string(parent), string(lite)}
			out[cur] = out[cur][:0]
		} else if !wanted || string(parent) != cur.Parent || string(lite) != cur.Lite {
			continue
		}
		if crc32.Checksum(body, castagnoli) != crc {
			return nil, fmt.Errorf("litelog spill %s: %w: crc mismatch", s.path(b), ErrCorrupt)
		}
		r, err := decode(body)
		if err != nil {
			return nil, fmt.Errorf("litelog spill %s: %w", s.path(b), err)
		}
		out[cur] = append(out[cur], r)
	}
	return out, nil
}

// names are a record body's parent and lite names, unchecked.
func names(body []byte) (parent, lite []byte, ok bool) {
	p := body[17:]
	n := int(binary.LittleEndian.Uint16(p))
	if len(p) < 2+n+2 {
		return nil, nil, false
	}
	parent, p = p[2:2+n], p[2+n:]
	m := int(binary.LittleEndian.Uint16(p))
	if len(p) < 2+m {
		return nil, nil, false
	}
	return parent, p[2 : 2+m], true
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

package raftstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/hashicorp/raft"

	"github.com/wheelmq/wheelmq/storage/vfs"
)

const stableMagic = "WMQRSTB1"

// ErrKeyNotFound is StableStore.Get's error for a missing key. Its text is
// "not found" because hashicorp/raft compares err.Error() to that.
var ErrKeyNotFound = errors.New("not found")

// StableStore is a raft.StableStore kept in one file replaced atomically
// on every Set (package doc).
type StableStore struct {
	fs        vfs.FS
	dir, path string

	mu sync.RWMutex
	kv map[string][]byte // guarded by mu
}

var _ raft.StableStore = (*StableStore)(nil)

// OpenStable opens the stable store in dir (empty when raft-stable does
// not exist). Temporary files of an interrupted Set are removed.
func OpenStable(dir string, fs vfs.FS) (*StableStore, error) {
	fs = vfs.Default(fs)
	if err := vfs.MkdirAllSynced(fs, dir, 0o755); err != nil {
		return nil, fmt.Errorf("raftstore: %w", err)
	}
	s := &StableStore{fs: fs, dir: dir, path: filepath.Join(dir, StableFile), kv: map[string][]byte{}}
	ents, err := fs.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("raftstore: %w", err)
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "."+StableFile+".tmp-") {
			if err := fs.Remove(filepath.Join(dir, e.Name())); err != nil {
				return nil, fmt.Errorf("raftstore: remove stale %s: %w", e.Name(), err)
			}
		}
	}
	buf, err := vfs.ReadFile(fs, s.path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return s, nil
	case err != nil:
		return nil, fmt.Errorf("raftstore: %w", err)
	}
	if s.kv, err = decodeStable(buf); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrCorrupt, s.path, err)
	}
	return s, nil
}

func encodeStable(kv map[string][]byte) []byte {
	keys := make([]string, 0, len(kv))
	for k := range kv {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b := []byte(stableMagic)
	b = binary.BigEndian.AppendUint32(b, uint32(len(keys)))
	for _, k := range keys {
		b = binary.BigEndian.AppendUint32(b, uint32(len(k)))
		b = append(b, k...)
		b = binary.BigEndian.AppendUint32(b, uint32(len(kv[k])))
		b = append(b, kv[k]...)
	}
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

func decodeStable(b []byte) (map[string][]byte, error) {
	if len(b) < len(stableMagic)+8 || string(b[:len(stableMagic)]) != stableMagic {
		return nil, errors.New("not a stable-store file")
	}
	body := b[:len(b)-4]
	if crc32.Checksum(body, castagnoli) != binary.BigEndian.Uint32(b[len(b)-4:]) {
		return nil, errors.New("checksum mismatch")
	}
	p := body[len(stableMagic):]
	n := binary.BigEndian.Uint32(p)
	p = p[4:]
	kv := make(map[string][]byte, min(n, 64))
	for i := uint32(0); i < n; i++ {
		var k, v []byte
		var err error
		if k, p, err = chunk(p); err != nil {
			return nil, fmt.Errorf("key %d: %w", i, err)
		}
		if v, p, err = chunk(p); err != nil {
			return nil, fmt.Errorf("value of %q: %w", k, err)
		}
		if v == nil {
			v = []byte{}
		}
		kv[string(k)] = v
	}
	if len(p) != 0 {
		return nil, fmt.Errorf("%d bytes after the last pair", len(p))
	}
	return kv, nil
}

// Set implements raft.StableStore: the value is durable when it returns
// nil.
func (s *StableStore) Set(key, val []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	next := make(map[string][]byte, len(s.kv)+1)
	for k, v := range s.kv {
		next[k] = v
	}
	next[string(key)] = append([]byte{}, val...)
	if err := vfs.WriteFileAtomic(s.fs, s.path, encodeStable(next), 0o644); err != nil {
		return fmt.Errorf("raftstore: set %q: %w", key, err)
	}
	s.kv = next
	return nil
}

// Get implements raft.StableStore; ErrKeyNotFound when key was never set.
func (s *StableStore) Get(key []byte) ([]byte, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	v, ok := s.kv[string(key)]
	if !ok {
		return nil, ErrKeyNotFound
	}
	return append([]byte{}, v...), nil
}

// SetUint64 implements raft.StableStore (8 big-endian bytes under key).
func (s *StableStore) SetUint64(key []byte, val uint64) error {
	return s.Set(key, binary.BigEndian.AppendUint64(nil, val))
}

// GetUint64 implements raft.StableStore: 0 when key was never set (as
// raft.InmemStore), an error when its value is not 8 bytes.
func (s *StableStore) GetUint64(key []byte) (uint64, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	v, ok := s.kv[string(key)]
	if !ok {
		return 0, nil
	}
	if len(v) != 8 {
		return 0, fmt.Errorf("raftstore: %s: value of %q is %d bytes, not a uint64", s.path, key, len(v))
	}
	return binary.BigEndian.Uint64(v), nil
}

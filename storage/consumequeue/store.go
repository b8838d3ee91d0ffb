package consumequeue

import (
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/storage/vfs"
)

// Store holds every consume queue under one directory. Its methods are safe
// for concurrent use.
type Store struct {
	dir string
	upf int64
	fs  vfs.FS
	log zerolog.Logger

	// queues guards the queue map. It is held only to read or change the
	// map, never across file I/O: Lookup runs on the network event loops.
	queues struct {
		sync.RWMutex
		m map[QueueID]*Queue
	}
	// dirs serializes the directory work of queue creation and deletion
	// (and Close), which runs outside the map lock.
	dirs   sync.Mutex
	closed atomic.Bool
}

// Open opens (creating if needed) the store in dir and loads every existing
// queue, cutting torn tails.
func Open(dir string, opts Options) (*Store, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("consumequeue open %s: %w", dir, err)
	}
	s := &Store{dir: dir, upf: int64(opts.UnitsPerFile), fs: opts.FS, log: opts.Logger}
	s.queues.m = make(map[QueueID]*Queue)
	if err := vfs.MkdirAllSynced(s.fs, dir, 0o755); err != nil {
		return nil, fmt.Errorf("consumequeue open %s: %w", dir, err)
	}
	if err := s.load(); err != nil {
		_ = s.Close()
		return nil, err
	}
	return s, nil
}

// load opens every <topic>/<queueId> directory.
func (s *Store) load() error {
	topics, err := s.fs.ReadDir(s.dir)
	if err != nil {
		return fmt.Errorf("consumequeue open %s: %w", s.dir, err)
	}
	for _, t := range topics {
		if !t.IsDir() || !validTopic(t.Name()) {
			s.log.Warn().Str("dir", s.dir).Str("name", t.Name()).Msg("consumequeue: ignoring entry that is not a topic")
			continue
		}
		topicDir := filepath.Join(s.dir, t.Name())
		queues, err := s.fs.ReadDir(topicDir)
		if err != nil {
			return fmt.Errorf("consumequeue open %s: %w", topicDir, err)
		}
		for _, e := range queues {
			qid, ok := parseQueueDir(e.Name())
			if !e.IsDir() || !ok {
				s.log.Warn().Str("dir", topicDir).Str("name", e.Name()).Msg("consumequeue: ignoring entry that is not a queue")
				continue
			}
			id := QueueID{Topic: t.Name(), QueueID: qid}
			q, err := openQueue(filepath.Join(topicDir, e.Name()), id, s.upf, s.fs, s.log)
			if err != nil {
				return err
			}
			s.queues.m[id] = q
		}
	}
	return nil
}

// queueDir returns the directory of a queue.
func (s *Store) queueDir(id QueueID) string {
	return filepath.Join(s.dir, id.Topic, strconv.Itoa(int(id.QueueID)))
}

// Queue returns the queue for (topic, queueID), creating its directory on
// first use.
func (s *Store) Queue(topic string, queueID int32) (*Queue, error) {
	if q := s.Lookup(topic, queueID); q != nil {
		return q, nil
	}
	if !validTopic(topic) {
		return nil, fmt.Errorf("consumequeue queue %q: %w", topic, ErrInvalidTopic)
	}
	if queueID < 0 {
		return nil, fmt.Errorf("consumequeue queue %s/%d: %w", topic, queueID, ErrInvalidQueueID)
	}
	// The directory is made under dirs, not under the map lock: a lookup
	// never waits for it.
	s.dirs.Lock()
	defer s.dirs.Unlock()
	if s.closed.Load() {
		return nil, fmt.Errorf("consumequeue queue %s/%d: %w", topic, queueID, ErrClosed)
	}
	if q := s.Lookup(topic, queueID); q != nil {
		return q, nil // created meanwhile
	}
	id := QueueID{Topic: topic, QueueID: queueID}
	dir := s.queueDir(id)
	if err := s.fs.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("consumequeue create %s: %w", dir, err)
	}
	q := &Queue{id: id, dir: dir, upf: s.upf, fs: s.fs, log: s.log}
	q.deferDirSync(filepath.Dir(dir), s.dir) // by its first Sync (see Queue.dirSync)
	s.queues.Lock()
	s.queues.m[id] = q
	s.queues.Unlock()
	return q, nil
}

// Lookup returns the queue for (topic, queueID), or nil if it does not
// exist.
func (s *Store) Lookup(topic string, queueID int32) *Queue {
	s.queues.RLock()
	defer s.queues.RUnlock()
	return s.queues.m[QueueID{Topic: topic, QueueID: queueID}]
}

// Queues returns the ids of every queue, sorted by topic then queue id.
func (s *Store) Queues() []QueueID {
	s.queues.RLock()
	out := make([]QueueID, 0, len(s.queues.m))
	for id := range s.queues.m {
		out = append(out, id)
	}
	s.queues.RUnlock()
	sort.Slice(out, func(i, j int) bool {
		if out[i].Topic != out[j].Topic {
			return out[i].Topic < out[j].Topic
		}
		return out[i].QueueID < out[j].QueueID
	})
	return out
}

// DeleteTopic closes every queue of topic and removes its directory. Later
// calls on those *Queue values return ErrClosed. Deleting an unknown topic is
// not an error.
func (s *Store) DeleteTopic(topic string) error {
	if !validTopic(topic) {
		return fmt.Errorf("consumequeue delete %q: %w", topic, ErrInvalidTopic)
	}
	s.dirs.Lock()
	defer s.dirs.Unlock()
	if s.closed.Load() {
		return fmt.Errorf("consumequeue delete %s: %w", topic, ErrClosed)
	}
	var gone []*Queue
	s.queues.Lock()
	for id, q := range s.queues.m {
		if id.Topic == topic {
			delete(s.queues.m, id)
			gone = append(gone, q)
		}
	}
	s.queues.Unlock()
	var errs []error
	for _, q := range gone { // out of the map: closed without the map lock
		if err := q.close(false); err != nil { // no fsync: the data is being deleted
			errs = append(errs, err)
		}
	}
	dir := filepath.Join(s.dir, topic)
	if err := s.fs.RemoveAll(dir); err != nil {
		errs = append(errs, fmt.Errorf("consumequeue delete %s: %w", dir, err))
	}
	if err := s.fs.SyncDir(s.dir); err != nil {
		errs = append(errs, fmt.Errorf("consumequeue delete %s: sync dir: %w", dir, err))
	}
	return errors.Join(errs...)
}

// Sync fsyncs every queue. It returns all errors joined.
func (s *Store) Sync() error {
	s.queues.RLock()
	qs := make([]*Queue, 0, len(s.queues.m))
	for _, q := range s.queues.m {
		qs = append(qs, q)
	}
	s.queues.RUnlock()
	var errs []error
	for _, q := range qs {
		if err := q.Sync(); err != nil && !errors.Is(err, ErrClosed) { // deleted meanwhile
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Close fsyncs and closes every queue. Later calls return ErrClosed.
func (s *Store) Close() error {
	s.dirs.Lock()
	defer s.dirs.Unlock()
	if s.closed.Swap(true) {
		return fmt.Errorf("consumequeue close %s: %w", s.dir, ErrClosed)
	}
	s.queues.RLock()
	qs := make([]*Queue, 0, len(s.queues.m))
	for _, q := range s.queues.m {
		qs = append(qs, q)
	}
	s.queues.RUnlock()
	var errs []error
	for _, q := range qs {
		if err := q.close(true); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

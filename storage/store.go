// Package storage opens a wheelmq data directory as one Store: the
// CommitLog, the ConsumeQueues, the metadata files and the checkpoint, and
// makes them consistent with each other after a crash.
//
// Layout of a data directory:
//
//	<data>/commitlog/<20-digit offset>      CommitLog segments (storage/commitlog)
//	<data>/consumequeue/<topic>/<queueId>/  ConsumeQueue files (storage/consumequeue)
//	<data>/config/topics.json               topic configuration (storage/meta)
//	<data>/config/consumerOffset.json       consumer offsets (storage/meta)
//	<data>/config/subscriptionGroup.json    subscription groups (storage/meta)
//	<data>/config/checkpoint                positions of the pipeline stages (storage/meta)
//	<data>/config/transactions.json         open transactions (storage/meta, actors/txcheck)
//	<data>/timer/                           the timer store (timerwheel)
//	<data>/LOCK                             held while a broker runs
//
// The subpackages own their formats; docs/formats.md has the byte layouts.
//
// Concurrency: the Store itself is immutable after Open. The CommitLog has
// one writer (the commitlog stage) and many readers; each ConsumeQueue has
// one writer (the dispatch stage) and many readers; metadata files are
// written by the stage that owns them.
package storage

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync/atomic"

	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/storage/commitlog"
	"github.com/wheelmq/wheelmq/storage/consumequeue"
	"github.com/wheelmq/wheelmq/storage/corruption"
	"github.com/wheelmq/wheelmq/storage/meta"
	"github.com/wheelmq/wheelmq/storage/vfs"
)

// ErrLocked means another process holds the data directory.
var ErrLocked = errors.New("storage: data directory is locked by another process")

// ErrUnreadable marks an error that keeps a broker from starting: its
// CommitLog cannot be read. Everything else on disk is derived from the
// CommitLog and is reconciled with it at start (actors/pipeline); the log
// itself is the one thing a start cannot do without.
var ErrUnreadable = errors.New("storage: the commitlog cannot be read")

// Unreadable wraps err, met reading the CommitLog of the data directory
// dir, with ErrUnreadable and what the operator can do about it.
func Unreadable(dir string, err error) error {
	cl := filepath.Join(dir, "commitlog")
	return fmt.Errorf("%w: %w; the broker starts from whatever a readable commitlog holds (every other file is "+
		"reconciled with it), so: check the disk and the permissions of %s, run `wheelctl store verify %s` to see "+
		"what is damaged, then restore %s from a backup (or move %s aside to start with an empty store)",
		ErrUnreadable, err, cl, dir, cl, dir)
}

// Options configures Open.
type Options struct {
	// SegmentSize is the CommitLog segment size (0: the commitlog default).
	SegmentSize int64
	// UnitsPerFile is the ConsumeQueue file size in units (0: default).
	UnitsPerFile int
	// Logger receives recovery reports.
	Logger zerolog.Logger
	// FS replaces the operating system's file system under every file of
	// the data directory: the CommitLog, the consume queues, the metadata
	// files, the directory lock, and (through Store.FS) the index and the
	// timer store (fault injection and crash simulation in tests, see
	// storage/vfs/vfstest and storage/vfs/crashfs); nil means the real one.
	FS vfs.FS
	// OnCorruption says what the store's readers do with damaged records:
	// skip them (the default) or stop. See package corruption.
	OnCorruption corruption.Policy
	// Corruption counts damaged bytes (wheelmq_store_corrupt_bytes_total);
	// nil: counted but not exported. Create it with corruption.NewMetrics
	// and share it with the timer store (timerwheel.Options.Corruption).
	Corruption *corruption.Metrics
}

// Store is an open data directory.
type Store struct {
	// Dir is the data directory.
	Dir string
	// FS is the file system every file of the directory is reached
	// through (Options.FS, or the real one).
	FS vfs.FS
	// CommitLog holds every stored message.
	CommitLog *commitlog.CommitLog
	// Queues holds the consume queues.
	Queues *consumequeue.Store
	// Dispatched is the CommitLog offset below which every record is in the
	// consume queues (maintained by the dispatch stage).
	Dispatched atomic.Int64
	// Corrections collects the derived positions found claiming more than
	// the recovered CommitLog holds, and what was made of them (the
	// consume queues' at Open; the stages add theirs).
	Corrections *Corrections
	// OpenedEnd is the CommitLog's end when Open recovered it: a derived
	// entry that names a record at or past it and does not find it there
	// survived a loss of the log's tail.
	OpenedEnd int64

	lock    io.Closer
	durable atomic.Pointer[DurableEnd] // nil: the CommitLog's flushed offset
	log     zerolog.Logger
	policy  corruption.Policy
	corrupt *corruption.Metrics
	damage  damage
}

// Open opens (creating if needed) the data directory dir, recovers the
// CommitLog (cutting a torn tail), drops consume-queue units that point
// past the recovered CommitLog end, and moves each consume queue's minimum
// up to the first unit the CommitLog still holds (after retention).
func Open(dir string, opts Options) (*Store, error) {
	fs := vfs.Default(opts.FS)
	if err := vfs.MkdirAllSynced(fs, filepath.Join(dir, "config"), 0o755); err != nil {
		return nil, fmt.Errorf("storage open %s: %w", dir, err)
	}
	lock, err := lockDir(fs, dir)
	if err != nil {
		return nil, err
	}
	if opts.Corruption == nil {
		opts.Corruption = corruption.NewMetrics(nil) // still reports each range once
	}
	s := &Store{Dir: dir, FS: fs, lock: lock, log: opts.Logger, policy: opts.OnCorruption, corrupt: opts.Corruption,
		Corrections: NewCorrections()}
	cl, err := commitlog.Open(filepath.Join(dir, "commitlog"), commitlog.Options{
		SegmentSize: opts.SegmentSize, Logger: opts.Logger, FS: fs,
	})
	if err != nil {
		_ = lock.Close()
		return nil, fmt.Errorf("storage open %s: %w", dir, Unreadable(dir, err))
	}
	s.CommitLog = cl
	for _, d := range cl.Recovery().Damaged {
		s.ReportCorruption(opts.Logger, corruption.Range{File: corruption.FileCommitLog, Path: cl.Dir(),
			From: d.Offset, To: d.Offset + d.Size, Reason: d.Reason, Action: "kept; readers skip it"})
	}
	cq, err := consumequeue.Open(filepath.Join(dir, "consumequeue"), consumequeue.Options{
		UnitsPerFile: opts.UnitsPerFile, Logger: opts.Logger, FS: fs,
	})
	if err != nil {
		_ = cl.Close()
		_ = lock.Close()
		return nil, fmt.Errorf("storage open %s: %w", dir, err)
	}
	s.Queues = cq
	end := cl.MaxOffset()
	s.OpenedEnd = end
	for _, id := range cq.Queues() {
		q := cq.Lookup(id.Topic, id.QueueID)
		if q == nil {
			continue
		}
		before := q.MaxOffset()
		if err := q.TruncateAbove(end); err != nil {
			_ = s.Close()
			return nil, fmt.Errorf("storage open %s: align consume queue %s/%d: %w", dir, id.Topic, id.QueueID, err)
		}
		if after := q.MaxOffset(); after < before {
			s.Corrections.Record(opts.Logger, Correction{What: FixConsumeQueue, Subject: id.String(),
				From: before, To: after, Dropped: before - after, CommitLogEnd: end})
		}
	}
	// Retention deleted the CommitLog below its minimum: the queues' minimums
	// follow (they are not persisted).
	if _, err := cq.TrimBelow(cl.MinOffset()); err != nil {
		_ = s.Close()
		return nil, fmt.Errorf("storage open %s: trim consume queues: %w", dir, err)
	}
	return s, nil
}

// TopicsPath is the topic configuration file.
func (s *Store) TopicsPath() string { return filepath.Join(s.Dir, "config", "topics.json") }

// OffsetsPath is the consumer offsets file.
func (s *Store) OffsetsPath() string { return filepath.Join(s.Dir, "config", "consumerOffset.json") }

// SubscriptionGroupsPath is the subscription group file.
func (s *Store) SubscriptionGroupsPath() string {
	return filepath.Join(s.Dir, "config", "subscriptionGroup.json")
}

// CheckpointPath is the stage checkpoint file.
func (s *Store) CheckpointPath() string { return filepath.Join(s.Dir, "config", "checkpoint") }

// RequestModesPath is the file of the consumption models set by
// SET_MESSAGE_REQUEST_MODE (RocketMQ's messageRequestMode.json).
func (s *Store) RequestModesPath() string {
	return filepath.Join(s.Dir, "config", "messageRequestMode.json")
}

// TransactionsPath is the transaction stage's state file.
func (s *Store) TransactionsPath() string { return filepath.Join(s.Dir, "config", "transactions.json") }

// TimerDir is the timer store's directory.
func (s *Store) TimerDir() string { return filepath.Join(s.Dir, "timer") }

// ACLDir is the directory of the ACL 2.0 users and policies (actors/acl).
func (s *Store) ACLDir() string { return filepath.Join(s.Dir, "acl") }

// LoadCheckpoint reads the checkpoint; a missing file is an empty checkpoint.
func (s *Store) LoadCheckpoint() (meta.Checkpoint, error) {
	cp, err := meta.LoadCheckpoint(s.FS, s.CheckpointPath())
	if errors.Is(err, os.ErrNotExist) {
		return meta.Checkpoint{Values: map[string]int64{}}, nil
	}
	return cp, err
}

// Sync fsyncs the CommitLog and the consume queues.
func (s *Store) Sync() error {
	if err := s.CommitLog.Sync(); err != nil {
		return fmt.Errorf("storage sync: %w", err)
	}
	if err := s.Queues.Sync(); err != nil {
		return fmt.Errorf("storage sync: %w", err)
	}
	return nil
}

// Close syncs and closes everything and releases the directory lock.
func (s *Store) Close() error {
	var errs []error
	if s.Queues != nil {
		errs = append(errs, s.Queues.Sync(), s.Queues.Close())
	}
	if s.CommitLog != nil {
		errs = append(errs, s.CommitLog.Sync(), s.CommitLog.Close())
	}
	if s.lock != nil {
		errs = append(errs, s.lock.Close())
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("storage close %s: %w", s.Dir, err)
	}
	return nil
}

// lockDir takes the data directory's lock (flock on <dir>/LOCK).
func lockDir(fs vfs.FS, dir string) (io.Closer, error) {
	path := filepath.Join(dir, "LOCK")
	l, err := fs.Lock(path)
	if errors.Is(err, vfs.ErrLocked) {
		return nil, fmt.Errorf("storage lock %s: %w", path, ErrLocked)
	}
	if err != nil {
		return nil, fmt.Errorf("storage lock %s: %w", path, err)
	}
	return l, nil
}

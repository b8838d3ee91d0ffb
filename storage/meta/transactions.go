package meta

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/wheelmq/wheelmq/storage/vfs"
)

// TransactionStateVersion is the version of transactions.json this build
// writes and reads.
const TransactionStateVersion = 1

// TransactionState is what the transaction stage (actors/txcheck) persists
// in config/transactions.json: where it is in the half queue, the
// transactions still open, and where to re-scan the CommitLog for ends it
// had not persisted yet. It is a plain value owned by its caller.
type TransactionState struct {
	// Version is TransactionStateVersion.
	Version int `json:"version"`
	// HalfNext is the next half-queue (RMQ_SYS_TRANS_HALF_TOPIC/0) offset
	// the stage has not read: every half message below it is either in
	// Pending or ended.
	HalfNext int64 `json:"halfNext"`
	// ScanFrom is a CommitLog offset such that every commit, rollback or
	// discard record not reflected in this state lies at or after it.
	ScanFrom int64 `json:"scanFrom"`
	// Pending are the open transactions, by half-queue offset, ascending.
	Pending []PendingTransaction `json:"pending"`
	// EndedAhead are half-queue offsets at or above HalfNext whose
	// transaction ended before the stage read them, ascending.
	EndedAhead []int64 `json:"endedAhead"`
}

// PendingTransaction is one open transaction.
type PendingTransaction struct {
	// QueueOffset is the half message's offset in the half queue.
	QueueOffset int64 `json:"queueOffset"`
	// CommitLogOffset is where the half message is stored.
	CommitLogOffset int64 `json:"commitLogOffset"`
	// Checks counts the CHECK_TRANSACTION_STATE requests delivered so far.
	Checks int32 `json:"checks"`
}

// Validate reports the first inconsistency of s.
func (s *TransactionState) Validate() error {
	if s.Version != TransactionStateVersion {
		return fmt.Errorf("transaction state version %d, want %d: %w", s.Version, TransactionStateVersion, ErrVersion)
	}
	if s.HalfNext < 0 || s.ScanFrom < 0 {
		return fmt.Errorf("negative halfNext %d or scanFrom %d", s.HalfNext, s.ScanFrom)
	}
	for i, p := range s.Pending {
		if p.QueueOffset < 0 || p.CommitLogOffset < 0 || p.Checks < 0 {
			return fmt.Errorf("pending[%d] %+v has a negative field", i, p)
		}
		if i > 0 && p.QueueOffset <= s.Pending[i-1].QueueOffset {
			return fmt.Errorf("pending[%d] queue offset %d not above %d", i, p.QueueOffset, s.Pending[i-1].QueueOffset)
		}
	}
	for i, q := range s.EndedAhead {
		if q < s.HalfNext {
			return fmt.Errorf("endedAhead[%d] = %d is below halfNext %d", i, q, s.HalfNext)
		}
		if i > 0 && q <= s.EndedAhead[i-1] {
			return fmt.Errorf("endedAhead[%d] = %d not above %d", i, q, s.EndedAhead[i-1])
		}
		if _, found := slices.BinarySearchFunc(s.Pending, q, func(p PendingTransaction, q int64) int {
			return cmp.Compare(p.QueueOffset, q)
		}); found {
			return fmt.Errorf("half offset %d is both pending and ended", q)
		}
	}
	return nil
}

// parseTransactionState decodes and validates transactions.json.
func parseTransactionState(data []byte) (TransactionState, error) {
	var s TransactionState
	if t := bytes.TrimSpace(data); len(t) == 0 || t[0] != '{' {
		return s, fmt.Errorf("not a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return s, err
	}
	if dec.More() {
		return s, fmt.Errorf("data after the JSON object")
	}
	if err := s.Validate(); err != nil {
		return s, err
	}
	return s, nil
}

// LoadTransactionState reads the transaction stage's state written by
// SaveTransactionState, falling back to the .bak file like the other JSON
// files; found is false when neither exists.
func LoadTransactionState(fs vfs.FS, path string, opts ...Option) (s TransactionState, found bool, err error) {
	o := buildOptions(opts)
	return loadWithBackup(fs, path, o.log, parseTransactionState)
}

// SaveTransactionState validates s and writes it to path, keeping the
// previous file as .bak.
func SaveTransactionState(fs vfs.FS, path string, s TransactionState) error {
	if s.Pending == nil {
		s.Pending = []PendingTransaction{}
	}
	if s.EndedAhead == nil {
		s.EndedAhead = []int64{}
	}
	if err := s.Validate(); err != nil {
		return fmt.Errorf("meta save %s: %w", path, err)
	}
	data, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("meta save %s: %w", path, err)
	}
	return saveWithBackup(fs, path, append(data, '\n'), func(b []byte) bool {
		_, err := parseTransactionState(b)
		return err == nil
	})
}

package meta

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func sampleTxState() TransactionState {
	return TransactionState{Version: 1, HalfNext: 40, ScanFrom: 123456,
		Pending:    []PendingTransaction{{QueueOffset: 3, CommitLogOffset: 900, Checks: 2}, {QueueOffset: 39, CommitLogOffset: 120000}},
		EndedAhead: []int64{41, 44}}
}

func TestTransactionStateRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "transactions.json")
	if _, found, err := LoadTransactionState(nil, path); err != nil || found {
		t.Fatalf("missing file: found %v err %v", found, err)
	}
	want := sampleTxState()
	if err := SaveTransactionState(nil, path, want); err != nil {
		t.Fatal(err)
	}
	got, found, err := LoadTransactionState(nil, path)
	if err != nil || !found || !reflect.DeepEqual(got, want) {
		t.Fatalf("load = %+v %v %v, want %+v", got, found, err, want)
	}
	empty := TransactionState{Version: 1, HalfNext: 41}
	if err := SaveTransactionState(nil, path, empty); err != nil {
		t.Fatal(err)
	}
	got, _, err = LoadTransactionState(nil, path)
	if err != nil || got.HalfNext != 41 || got.Pending == nil || len(got.Pending) != 0 || len(got.EndedAhead) != 0 {
		t.Fatalf("empty state reloaded as %+v (%v)", got, err)
	}
	// The previous content is the backup; a damaged main file falls back to it.
	if err := os.WriteFile(path, []byte(`{"version":1,"halfNext":`), 0o644); err != nil {
		t.Fatal(err)
	}
	got, found, err = LoadTransactionState(nil, path)
	if err != nil || !found || !reflect.DeepEqual(got, want) {
		t.Fatalf("fallback to backup = %+v %v %v, want %+v", got, found, err, want)
	}
	if err := os.WriteFile(path+BackupSuffix, []byte(`[]`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := LoadTransactionState(nil, path); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("both files damaged: err %v, want ErrCorrupt", err)
	}
}

func TestTransactionStateValidate(t *testing.T) {
	tests := []struct {
		name  string
		edit  func(*TransactionState)
		valid bool
	}{
		{"sample", func(*TransactionState) {}, true},
		{"version 2", func(s *TransactionState) { s.Version = 2 }, false},
		{"negative half", func(s *TransactionState) { s.HalfNext = -1 }, false},
		{"negative scan", func(s *TransactionState) { s.ScanFrom = -1 }, false},
		{"pending unsorted", func(s *TransactionState) { s.Pending[0].QueueOffset = 50 }, false},
		{"pending duplicate", func(s *TransactionState) { s.Pending[1].QueueOffset = 3 }, false},
		{"pending negative checks", func(s *TransactionState) { s.Pending[0].Checks = -1 }, false},
		{"pending at or above halfNext", func(s *TransactionState) { s.Pending[1].QueueOffset = 42 }, true},
		{"ended below halfNext", func(s *TransactionState) { s.EndedAhead[0] = 39 }, false},
		{"ended unsorted", func(s *TransactionState) { s.EndedAhead[1] = 41 }, false},
		{"ended and pending", func(s *TransactionState) { s.Pending[1].QueueOffset = 44 }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := sampleTxState()
			tt.edit(&s)
			if err := s.Validate(); (err == nil) != tt.valid {
				t.Fatalf("Validate() = %v, want valid %v", err, tt.valid)
			}
		})
	}
}

func TestParseTransactionStateRejects(t *testing.T) {
	for _, in := range []string{``, `[]`, `{"version":1,"halfNext":"x"}`, `{"version":1,"bogus":1}`,
		`{"version":1} {}`, `{"version":0}`} {
		if s, err := parseTransactionState([]byte(in)); err == nil {
			t.Errorf("parseTransactionState(%q) = %+v, want an error", in, s)
		}
	}
}

// FuzzParseTransactionState: never panics; what it accepts is valid and
// survives a save/load round trip.
func FuzzParseTransactionState(f *testing.F) {
	f.Add([]byte(`{"version":1,"halfNext":40,"scanFrom":123456,"pending":[{"queueOffset":3,"commitLogOffset":900,"checks":2}],"endedAhead":[41,44]}`))
	f.Add([]byte(`{"version":1,"halfNext":0,"scanFrom":0,"pending":[],"endedAhead":[]}`))
	f.Add([]byte(`{"version":1,"halfNext":5,"endedAhead":[4]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := parseTransactionState(b)
		if err != nil {
			return
		}
		if err := s.Validate(); err != nil {
			t.Fatalf("accepted an invalid state: %v", err)
		}
		path := filepath.Join(t.TempDir(), "transactions.json")
		if err := SaveTransactionState(nil, path, s); err != nil {
			t.Fatal(err)
		}
		again, _, err := LoadTransactionState(nil, path)
		if err != nil || again.HalfNext != s.HalfNext || again.ScanFrom != s.ScanFrom ||
			len(again.Pending) != len(s.Pending) || len(again.EndedAhead) != len(s.EndedAhead) {
			t.Fatalf("round trip: %+v (%v), want %+v", again, err, s)
		}
	})
}

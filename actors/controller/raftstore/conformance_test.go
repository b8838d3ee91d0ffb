package raftstore

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/wheelmq/wheelmq/storage/vfs/crashfs"
)

// step is one call made on both raft.InmemStore and the store under test.
type step struct {
	op       string // store, delete, get, first, last, set, getkey, setu, getu, reopen
	lo, hi   uint64 // store: indexes lo..hi; delete: range; get: lo
	term     uint64
	key, val string
	u        uint64
}

func entries(lo, hi, term uint64) []*raft.Log {
	var out []*raft.Log
	for i := lo; i <= hi; i++ {
		out = append(out, &raft.Log{Index: i, Term: term, Type: raft.LogCommand,
			Data: []byte(fmt.Sprintf("cmd-%d-%d", i, term)), AppendedAt: time.Unix(1700000000, int64(i))})
	}
	return out
}

// run applies st to a log store and a stable store and describes the
// outcome.
func run(st step, l raft.LogStore, s raft.StableStore) string {
	switch st.op {
	case "store":
		return fmt.Sprint(l.StoreLogs(entries(st.lo, st.hi, st.term)))
	case "delete":
		return fmt.Sprint(l.DeleteRange(st.lo, st.hi))
	case "get":
		var got raft.Log
		err := l.GetLog(st.lo, &got)
		if err != nil {
			return err.Error()
		}
		return fmt.Sprintf("%d/%d/%v/%q/%q/%d", got.Index, got.Term, got.Type, got.Data, got.Extensions, got.AppendedAt.UnixNano())
	case "first":
		i, err := l.FirstIndex()
		return fmt.Sprint(i, err)
	case "last":
		i, err := l.LastIndex()
		return fmt.Sprint(i, err)
	case "set":
		return fmt.Sprint(s.Set([]byte(st.key), []byte(st.val)))
	case "getkey":
		v, err := s.Get([]byte(st.key))
		return fmt.Sprintf("%q %v", v, err)
	case "setu":
		return fmt.Sprint(s.SetUint64([]byte(st.key), st.u))
	case "getu":
		u, err := s.GetUint64([]byte(st.key))
		return fmt.Sprint(u, err)
	}
	panic("unknown step " + st.op)
}

// TestConformsToInmemStore runs the same calls on raft.InmemStore and on
// LogStore + StableStore (on crashfs, reopened at every "reopen" step:
// what was stored survives a close) and wants the same answers.
func TestConformsToInmemStore(t *testing.T) {
	probe := []step{{op: "first"}, {op: "last"}}
	for i := uint64(0); i <= 12; i++ {
		probe = append(probe, step{op: "get", lo: i})
	}
	cases := map[string][]step{
		"empty":  nil,
		"append": {{op: "store", lo: 1, hi: 5, term: 1}, {op: "store", lo: 6, hi: 6, term: 2}},
		"prefix compaction": {{op: "store", lo: 1, hi: 10, term: 1}, {op: "delete", lo: 1, hi: 4},
			{op: "reopen"}, {op: "delete", lo: 5, hi: 7}},
		"suffix conflict": {{op: "store", lo: 1, hi: 8, term: 1}, {op: "delete", lo: 6, hi: 8},
			{op: "store", lo: 6, hi: 9, term: 3}},
		"overwrite in place": {{op: "store", lo: 1, hi: 4, term: 1}, {op: "store", lo: 3, hi: 3, term: 2}},
		"delete all then restart from a snapshot index": {{op: "store", lo: 1, hi: 5, term: 1},
			{op: "delete", lo: 1, hi: 5}, {op: "reopen"}, {op: "store", lo: 9, hi: 11, term: 4}},
		"stable keys": {{op: "getkey", key: "LastVoteCand"}, {op: "getu", key: "CurrentTerm"},
			{op: "setu", key: "CurrentTerm", u: 7}, {op: "set", key: "LastVoteCand", val: "n1:9876"},
			{op: "reopen"}, {op: "setu", key: "CurrentTerm", u: 8}, {op: "set", key: "empty", val: ""}},
	}
	for name, steps := range cases {
		t.Run(name, func(t *testing.T) {
			mem := raft.NewInmemStore()
			fs := crashfs.New()
			open := func() (*LogStore, *StableStore) {
				l, err := OpenLog("/ctl", Options{FS: fs, RewriteMinBytes: 64})
				if err != nil {
					t.Fatal(err)
				}
				s, err := OpenStable("/ctl", fs)
				if err != nil {
					t.Fatal(err)
				}
				return l, s
			}
			l, s := open()
			all := append([]step{}, steps...)
			all = append(all, probe...)
			all = append(all, step{op: "getkey", key: "LastVoteCand"}, step{op: "getu", key: "CurrentTerm"},
				step{op: "getkey", key: "empty"}, step{op: "reopen"})
			all = append(all, probe...)
			for i, st := range all {
				if st.op == "reopen" {
					if err := l.Close(); err != nil {
						t.Fatal(err)
					}
					fs = fs.Crash() // everything acknowledged was synced
					l, s = open()
					continue
				}
				want, got := run(st, mem, mem), run(st, l, s)
				if want != got {
					t.Errorf("step %d %+v: InmemStore %q, LogStore %q", i, st, want, got)
				}
			}
			_ = l.Close()
		})
	}
}

// TestGetLogCopies: a stored entry is the store's own copy.
func TestGetLogCopies(t *testing.T) {
	l, err := OpenLog("/ctl", Options{FS: crashfs.New()})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	e := entries(1, 1, 1)
	if err := l.StoreLogs(e); err != nil {
		t.Fatal(err)
	}
	e[0].Data[0] = 'X'
	var got raft.Log
	if err := l.GetLog(1, &got); err != nil || string(got.Data) != "cmd-1-1" {
		t.Fatalf("got %q %v, want the stored bytes", got.Data, err)
	}
	if err := l.GetLog(2, &got); !errors.Is(err, raft.ErrLogNotFound) {
		t.Fatalf("GetLog(2) = %v, want ErrLogNotFound", err)
	}
}

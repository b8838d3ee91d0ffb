package timerwheel

import (
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"sync"
	"testing"

	"github.com/wheelmq/wheelmq/storage/vfs/vfstest"
)

// TestAdoptTakesEveryField keeps Reopen's field list complete: after adopt
// every field but the locks equals the adopted store's.
func TestAdoptTakesEveryField(t *testing.T) {
	n := openStore(t, testOptions(t.TempDir()), T0)
	mustAdd(t, n, T0, timerAt(1, T0+5000))
	var s Store
	s.adopt(n)
	vs, vn := reflect.ValueOf(&s).Elem(), reflect.ValueOf(n).Elem()
	mutex := reflect.TypeOf(sync.Mutex{})
	for i := range vs.NumField() {
		f := vs.Type().Field(i)
		if f.Type == mutex {
			continue
		}
		if a, b := fmt.Sprint(vs.Field(i)), fmt.Sprint(vn.Field(i)); a != b {
			t.Errorf("field %s not adopted: %.80s, want %.80s", f.Name, a, b)
		}
	}
}

// TestReopenAfterFullDisk fills the disk under the TimerLog: the store
// fails, refuses everything with ErrFailed, is reopened once writes work
// again, and then holds every timer that was durable, takes new ones and
// releases them all at their time.
func TestReopenAfterFullDisk(t *testing.T) {
	dir := t.TempDir()
	fs := &vfstest.FaultFS{}
	fs.Scope(filepath.Join(dir, logDirName))
	opts := testOptions(dir)
	opts.FS, opts.NoSync = fs, false
	s := openStore(t, opts, T0)
	mustAdd(t, s, T0, timerAt(1, T0+1000), timerAt(2, T0+2000))
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	fs.Full(true)
	if err := s.Add([]Timer{timerAt(3, T0+3000)}, T0); err == nil {
		t.Fatal("Add on a full disk succeeded")
	}
	if _, err := s.Due(T0+1500, 10); !errors.Is(err, ErrFailed) {
		t.Fatalf("Due of a failed store: %v, want ErrFailed", err)
	}
	if err := s.Failed(); err == nil {
		t.Fatal("Failed() is nil after a failed write")
	}
	fs.FailTruncate(true) // the half-written record's tail cannot be cut yet
	if err := s.Reopen(T0); err == nil {
		t.Fatal("reopen succeeded though its tail repair could not write")
	}
	if s.Failed() == nil {
		t.Fatal("a failed reopen cleared the failure")
	}
	if st := s.Stats(); st.Pending < 2 {
		t.Fatalf("pending after a failed reopen: %d, want the 2 durable timers still held", st.Pending)
	}
	fs.Full(false)
	fs.FailTruncate(false)
	if err := s.Reopen(T0); err != nil {
		t.Fatalf("reopen once the disk has room: %v", err)
	}
	if err := s.Failed(); err != nil {
		t.Fatalf("still failed after the reopen: %v", err)
	}
	if st := s.Stats(); st.Pending != 2 {
		t.Fatalf("pending after the reopen: %d, want the 2 durable timers", st.Pending)
	}
	mustAdd(t, s, T0, timerAt(3, T0+3000)) // the queue offset refused before is taken now
	h := newHarness(t, s)
	h.run(T0, T0+4000)
	got := h.delivered()
	for id := int64(1); id <= 3; id++ {
		if got[id] != 1 {
			t.Errorf("timer %d delivered %d times, want 1 (all: %v)", id, got[id], got)
		}
	}
}

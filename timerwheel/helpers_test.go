package timerwheel

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// T0 is the test epoch: an arbitrary, slot-aligned wall-clock time.
const T0 = int64(1_700_000_000_000)

func testOptions(dir string) Options {
	return Options{Dir: dir, SegmentSize: 64 << 10, NoSync: true}
}

func openStore(t testing.TB, opts Options, now int64) *Store {
	t.Helper()
	s, err := Open(opts, now)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// timerAt is a normal timer for DeliverMs at, identified by id (its
// CommitLog offset and queue offset).
func timerAt(id int64, at int64) Timer {
	return Timer{Kind: KindNormal, DeliverMs: at, CommitLogOffset: id, QueueOffset: id, Size: 100,
		KeyHash: KeyHash("TopicA", keyOf(id))}
}

func keyOf(id int64) string { return "uniq-" + string(rune('a'+id%26)) + itoa(id) }

func itoa(v int64) string {
	if v == 0 {
		return "0"
	}
	var b [20]byte
	i := len(b)
	for v > 0 {
		i--
		b[i] = byte('0' + v%10)
		v /= 10
	}
	return string(b[i:])
}

func mustAdd(t testing.TB, s *Store, now int64, timers ...Timer) {
	t.Helper()
	if err := s.Add(timers, now); err != nil {
		t.Fatal(err)
	}
}

// released records one timer as it came out of Due.
type released struct {
	Timer
	at        int64 // nowMs of the Due call
	cancelled bool
}

// harness drives a store like the dequeue actors would: Due, check, Ack,
// and a Flush every flushEvery calls.
type harness struct {
	t          testing.TB
	s          *Store
	out        []released
	calls      int
	flushEvery int
	max        int
	called     map[int64]bool // times Due was called at
}

func newHarness(t testing.TB, s *Store) *harness {
	return &harness{t: t, s: s, flushEvery: 4, max: 1000, called: map[int64]bool{}}
}

// due calls Due at now until it returns nothing more, checking never-early
// and the cursor order, and acknowledging each batch.
func (h *harness) due(now int64) {
	h.t.Helper()
	h.called[now] = true
	for i := 0; ; i++ {
		if i > 10_000 {
			nd, ok := h.s.NextDue()
			h.t.Fatalf("Due(%d) does not settle: next %d %v base %d R %d ringBase %d heap %d issued %v acked %v durable %v",
				now, nd, ok, h.s.base*h.s.geo.SlotMs, h.s.relinkedUpTo, h.s.ringBase*h.s.geo.SlotMs, h.s.ready.Len(), h.s.issued, h.s.acked, h.s.durable)
		}
		b, err := h.s.Due(now, h.max)
		if err != nil {
			h.t.Fatal(err)
		}
		prev := b.From
		for _, tm := range b.Timers {
			if tm.DeliverMs > now {
				h.t.Fatalf("EARLY: timer %d due %d released at %d", tm.CommitLogOffset, tm.DeliverMs, now)
			}
			if !prev.Less(tm.Cursor()) {
				h.t.Fatalf("cursor order: %v then %v", prev, tm.Cursor())
			}
			prev = tm.Cursor()
			h.out = append(h.out, released{Timer: tm, at: now})
		}
		for _, tm := range b.Cancelled {
			h.out = append(h.out, released{Timer: tm, at: now, cancelled: true})
		}
		if err := h.s.Ack(b); err != nil {
			h.t.Fatal(err)
		}
		h.calls++
		if h.calls%h.flushEvery == 0 {
			if err := h.s.Flush(); err != nil {
				h.t.Fatal(err)
			}
		}
		if b.Len() < h.max {
			next, ok := h.s.NextDue()
			if !ok || next > now {
				return
			}
			// Waiting for room: flush like the flusher actor would.
			if err := h.s.Flush(); err != nil {
				h.t.Fatal(err)
			}
		}
	}
}

// run steps the clock from 'from' to 'to' following NextDue (never
// skipping a due time) and calls due at each step.
func (h *harness) run(from, to int64) {
	h.t.Helper()
	now := from
	for {
		h.due(now)
		next, ok := h.s.NextDue()
		if !ok || next > to {
			if now < to {
				h.due(to)
			}
			return
		}
		now = max(next, now+1)
	}
}

// delivered returns the ids of non-cancelled released timers.
func (h *harness) delivered() map[int64]int {
	m := map[int64]int{}
	for _, r := range h.out {
		if !r.cancelled {
			m[r.CommitLogOffset]++
		}
	}
	return m
}

// copyDir copies a store directory (files only, one level of subdirs): a
// crash image of what is on disk at this moment.
func copyDir(t testing.TB, src, dst string) {
	t.Helper()
	err := filepath.Walk(src, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if fi.IsDir() {
			return os.MkdirAll(target, 0o750)
		}
		in, err := os.Open(p)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.Create(target)
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			_ = out.Close()
			return err
		}
		return out.Close()
	})
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
}

// filepathGlobAll lists the non-test Go files under dir.
func filepathGlobAll(dir string) ([]string, error) {
	var out []string
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if !fi.IsDir() && filepath.Ext(p) == ".go" && !strings.HasSuffix(p, "_test.go") {
			out = append(out, p)
		}
		return nil
	})
	return out, err
}

// containsAny reports whether the file at path contains any of subs.
func containsAny(path string, subs ...string) bool {
	b, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	for _, s := range subs {
		if strings.Contains(string(b), s) {
			return true
		}
	}
	return false
}

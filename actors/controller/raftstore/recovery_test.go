package raftstore

import (
	"errors"
	"fmt"
	"math/rand"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/wheelmq/wheelmq/storage/vfs"
	"github.com/wheelmq/wheelmq/storage/vfs/crashfs"
	"github.com/wheelmq/wheelmq/storage/vfs/vfstest"
)

// lostSyncFS is crashfs whose file Syncs, once lose is set, fail without
// syncing: the write before stays unsynced, for a crash to tear.
type lostSyncFS struct {
	*crashfs.FS
	lose *atomic.Bool
}

func (fs lostSyncFS) OpenFile(name string, flag int, perm os.FileMode) (vfs.File, error) {
	f, err := fs.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return lostSyncFile{f, fs.lose}, nil
}

type lostSyncFile struct {
	vfs.File
	lose *atomic.Bool
}

func (f lostSyncFile) Sync() error {
	if f.lose.Load() {
		return errors.New("injected: sync lost")
	}
	return f.File.Sync()
}

// dump describes every entry of l, for comparing with a model.
func dump(t *testing.T, l raft.LogStore) string {
	t.Helper()
	first, _ := l.FirstIndex()
	last, _ := l.LastIndex()
	var b strings.Builder
	fmt.Fprintf(&b, "[%d,%d]", first, last)
	if first == 0 {
		return b.String()
	}
	for i := first; i <= last; i++ {
		var e raft.Log
		if err := l.GetLog(i, &e); err == nil {
			fmt.Fprintf(&b, " %d/%d/%s", e.Index, e.Term, e.Data)
		}
	}
	return b.String()
}

// randomOp does one raft-like call on both stores: appends (after a
// conflicting suffix is cut now and then) and prefix compactions.
func randomOp(r *rand.Rand, term *uint64, stores ...raft.LogStore) error {
	last, _ := stores[0].LastIndex()
	first, _ := stores[0].FirstIndex()
	var err error
	switch k := r.Intn(10); {
	case k < 6 || last == 0:
		n := uint64(1 + r.Intn(20))
		for _, s := range stores {
			err = errors.Join(err, s.StoreLogs(entries(last+1, last+n, *term)))
		}
	case k < 8:
		cut := first + uint64(r.Int63n(int64(last-first+1)))
		*term++
		for _, s := range stores {
			err = errors.Join(err, s.DeleteRange(cut, last))
		}
	default:
		upTo := first + uint64(r.Int63n(int64(last-first+1)))
		for _, s := range stores {
			err = errors.Join(err, s.DeleteRange(first, upTo))
		}
	}
	return err
}

// TestCrashRandomKeepsAcknowledged: random appends and compactions on
// crashfs, the last call's fsync lost, then a crash keeping a random part
// of the unsynced bytes: the reopened log holds every acknowledged call's
// outcome and, at most, the lost call's too; never an error. Loops of
// WHEELMQ_RAFTSTORE_CRASH_LOOPS (default 200); the seed is logged.
func TestCrashRandomKeepsAcknowledged(t *testing.T) {
	seed := time.Now().UnixNano()
	loops := envInt(t, "WHEELMQ_RAFTSTORE_CRASH_LOOPS", 200)
	t.Logf("seed %d, %d loops", seed, loops)
	r := rand.New(rand.NewSource(seed))
	torn := 0
	for loop := 0; loop < loops; loop++ {
		cfs := crashfs.New()
		lose := &atomic.Bool{}
		fs := lostSyncFS{cfs, lose}
		l, err := OpenLog("/ctl", Options{FS: fs, RewriteMinBytes: int64(256 + r.Intn(4096))})
		if err != nil {
			t.Fatal(err)
		}
		model, after := raft.NewInmemStore(), raft.NewInmemStore()
		term := uint64(1)
		for n := r.Intn(60); n > 0; n-- {
			if err := randomOp(r, &term, l, model, after); err != nil {
				t.Fatalf("loop %d (seed %d): %v", loop, seed, err)
			}
		}
		// The call in flight: its fsync never happens.
		lose.Store(true)
		if err := randomOp(r, &term, after, l); err == nil {
			t.Fatalf("loop %d (seed %d): the lost sync went unreported", loop, seed)
		}
		if err := l.StoreLogs(entries(1000, 1000, 9)); err == nil {
			t.Fatalf("loop %d: a write after a failed sync was accepted", loop)
		}
		l2, err := OpenLog("/ctl", Options{FS: cfs.CrashRandom(r)})
		if err != nil {
			t.Fatalf("loop %d (seed %d): reopen after crash: %v", loop, seed, err)
		}
		if l2.Recovery().TornBytes > 0 {
			torn++
		}
		got := dump(t, l2)
		if want, alt := dump(t, model), dump(t, after); got != want && got != alt {
			t.Fatalf("loop %d (seed %d): after the crash\n got %s\nwant %s\n  or %s", loop, seed, got, want, alt)
		}
		_ = l2.Close()
	}
	t.Logf("%d of %d crashes left a torn tail that was cut", torn, loops)
}

// TestTornTailShapes: an interrupted frame of any length, zeros or garbage
// after the last frame are cut at Open; the entries before stay.
func TestTornTailShapes(t *testing.T) {
	frame, _ := appendEntriesFrame(nil, entries(4, 6, 2))
	tails := map[string][]byte{
		"half a frame":  frame[:len(frame)/2],
		"a header only": frame[:frameHeader],
		"3 bytes":       frame[:3],
		"zeros":         make([]byte, 4096),
		"bad crc":       append(append([]byte{}, frame[:len(frame)-1]...), frame[len(frame)-1]^0xff),
	}
	for name, tail := range tails {
		t.Run(name, func(t *testing.T) {
			fs := crashfs.New()
			l, err := OpenLog("/ctl", Options{FS: fs})
			if err != nil {
				t.Fatal(err)
			}
			if err := l.StoreLogs(entries(1, 3, 1)); err != nil {
				t.Fatal(err)
			}
			size := l.end
			_ = l.Close()
			appendRaw(t, fs, "/ctl/"+LogFile, tail)
			l, err = OpenLog("/ctl", Options{FS: fs})
			if err != nil {
				t.Fatalf("open with a torn tail: %v", err)
			}
			defer l.Close()
			if rec := l.Recovery(); rec.TornAt != size || rec.TornBytes != int64(len(tail)) {
				t.Fatalf("recovery %+v, want the tail at %d (%d bytes) cut", rec, size, len(tail))
			}
			if got := dump(t, l); got != "[1,3] 1/1/cmd-1-1 2/1/cmd-2-1 3/1/cmd-3-1" {
				t.Fatalf("after the cut: %s", got)
			}
			if err := l.StoreLogs(entries(4, 4, 1)); err != nil {
				t.Fatal(err)
			}
			if st, _ := fs.Stat("/ctl/" + LogFile); st.Size() != l.end {
				t.Fatalf("file is %d bytes, store thinks %d", st.Size(), l.end)
			}
		})
	}
}

func appendRaw(t *testing.T, fs vfs.FS, name string, b []byte) {
	t.Helper()
	f, err := fs.OpenFile(name, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	size, _ := f.Size()
	if _, err := f.WriteAt(b, size); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
}

// TestCorruptMiddleIsAnError: a flipped bit in a frame that an intact
// frame follows is reported with the file and the offset, not cut.
func TestCorruptMiddleIsAnError(t *testing.T) {
	fs := crashfs.New()
	l, err := OpenLog("/ctl", Options{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.StoreLogs(entries(1, 3, 1)); err != nil {
		t.Fatal(err)
	}
	second := l.end
	if err := l.StoreLogs(entries(4, 6, 1)); err != nil {
		t.Fatal(err)
	}
	if err := l.StoreLogs(entries(7, 9, 1)); err != nil {
		t.Fatal(err)
	}
	_ = l.Close()
	f, _ := fs.OpenFile("/ctl/"+LogFile, os.O_RDWR, 0)
	b := make([]byte, 1)
	_, _ = f.ReadAt(b, second+20)
	_, _ = f.WriteAt([]byte{b[0] ^ 0x10}, second+20)
	_ = f.Close()
	_, err = OpenLog("/ctl", Options{FS: fs})
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "/ctl/raft.log") ||
		!strings.Contains(err.Error(), fmt.Sprintf("offset %d", second)) {
		t.Fatalf("open = %v, want ErrCorrupt naming /ctl/raft.log and offset %d", err, second)
	}
}

// TestWriteErrorsAreSticky: after a failed write (half written, ENOSPC)
// every later write fails; a reopen cuts the half frame and goes on.
func TestWriteErrorsAreSticky(t *testing.T) {
	dir := t.TempDir()
	fs := &vfstest.FaultFS{}
	l, err := OpenLog(dir, Options{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.StoreLogs(entries(1, 2, 1)); err != nil {
		t.Fatal(err)
	}
	fs.FailWrite(1)
	if err := l.StoreLogs(entries(3, 4, 1)); err == nil {
		t.Fatal("the injected write error went unreported")
	}
	fs.Reset()
	if err := l.StoreLogs(entries(3, 4, 1)); err == nil {
		t.Fatal("a write after a failed one was accepted")
	}
	if err := l.DeleteRange(1, 1); err == nil {
		t.Fatal("a delete after a failed write was accepted")
	}
	_ = l.Close()
	l, err = OpenLog(dir, Options{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if l.Recovery().TornBytes == 0 || dump(t, l) != "[1,2] 1/1/cmd-1-1 2/1/cmd-2-1" {
		t.Fatalf("after reopen: %+v %s", l.Recovery(), dump(t, l))
	}
}

// TestRewriteShrinksTheFile: compaction behind a snapshot rewrites a
// mostly dead raft.log; the entries stay, the stale .tmp of an interrupted
// rewrite is removed at Open.
func TestRewriteShrinksTheFile(t *testing.T) {
	fs := crashfs.New()
	l, err := OpenLog("/ctl", Options{FS: fs, RewriteMinBytes: 1024})
	if err != nil {
		t.Fatal(err)
	}
	for i := uint64(0); i < 20; i++ {
		if err := l.StoreLogs(entries(i*10+1, i*10+10, 1)); err != nil {
			t.Fatal(err)
		}
	}
	big := l.end
	if err := l.DeleteRange(1, 190); err != nil {
		t.Fatal(err)
	}
	if l.end*4 > big {
		t.Fatalf("raft.log is %d bytes after compacting 190 of 200 entries (was %d)", l.end, big)
	}
	_ = l.Close()
	if err := vfs.WriteFileAtomic(fs, "/ctl/"+logTmp, []byte("half a rewrite"), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err = OpenLog("/ctl", Options{FS: fs.Crash()})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if first, _ := l.FirstIndex(); first != 191 {
		t.Fatalf("first index %d after the rewrite and a crash, want 191", first)
	}
	if last, _ := l.LastIndex(); last != 200 {
		t.Fatalf("last index %d, want 200", last)
	}
	if _, err := l.fs.Stat("/ctl/" + logTmp); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("stale %s not removed: %v", logTmp, err)
	}
}

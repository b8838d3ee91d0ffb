package crashfs

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/storage/vfs"
)

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func write(t *testing.T, fs vfs.FS, name string, data string, off int64, sync bool) vfs.File {
	t.Helper()
	f, err := fs.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	must(t, err)
	_, err = f.WriteAt([]byte(data), off)
	must(t, err)
	if sync {
		must(t, f.Sync())
	}
	return f
}

// content returns the file's bytes, or "<missing>".
func content(t *testing.T, fs vfs.FS, name string) string {
	t.Helper()
	b, err := vfs.ReadFile(fs, name)
	if errors.Is(err, os.ErrNotExist) {
		return "<missing>"
	}
	must(t, err)
	return string(b)
}

// TestStrictCrash walks through what a crash keeps, case by case.
func TestStrictCrash(t *testing.T) {
	cases := []struct {
		name string
		do   func(t *testing.T, fs *FS)
		want map[string]string // path -> content after a crash
	}{
		{"synced write of a synced entry survives", func(t *testing.T, fs *FS) {
			write(t, fs, "/d/a", "hello", 0, true)
			must(t, fs.SyncDir("/d"))
		}, map[string]string{"/d/a": "hello"}},
		{"unsynced write is lost", func(t *testing.T, fs *FS) {
			f := write(t, fs, "/d/a", "hello", 0, true)
			must(t, fs.SyncDir("/d"))
			_, err := f.WriteAt([]byte(" world"), 5)
			must(t, err)
			_, err = f.WriteAt([]byte("J"), 0)
			must(t, err)
		}, map[string]string{"/d/a": "hello"}},
		{"synced file whose entry is not synced is gone", func(t *testing.T, fs *FS) {
			write(t, fs, "/d/a", "hello", 0, true)
		}, map[string]string{"/d/a": "<missing>"}},
		{"synced entry of an unsynced file is empty", func(t *testing.T, fs *FS) {
			write(t, fs, "/d/a", "hello", 0, false)
			must(t, fs.SyncDir("/d"))
		}, map[string]string{"/d/a": ""}},
		{"unsynced remove is undone", func(t *testing.T, fs *FS) {
			write(t, fs, "/d/a", "hello", 0, true)
			must(t, fs.SyncDir("/d"))
			must(t, fs.Remove("/d/a"))
		}, map[string]string{"/d/a": "hello"}},
		{"synced remove holds", func(t *testing.T, fs *FS) {
			write(t, fs, "/d/a", "hello", 0, true)
			must(t, fs.SyncDir("/d"))
			must(t, fs.Remove("/d/a"))
			must(t, fs.SyncDir("/d"))
		}, map[string]string{"/d/a": "<missing>"}},
		{"unsynced truncation is undone", func(t *testing.T, fs *FS) {
			f := write(t, fs, "/d/a", "hello world", 0, true)
			must(t, fs.SyncDir("/d"))
			must(t, f.Truncate(5))
		}, map[string]string{"/d/a": "hello world"}},
		{"synced truncation and growth", func(t *testing.T, fs *FS) {
			f := write(t, fs, "/d/a", "hello world", 0, true)
			must(t, fs.SyncDir("/d"))
			must(t, f.Truncate(5))
			must(t, f.Truncate(7))
			must(t, f.Sync())
		}, map[string]string{"/d/a": "hello\x00\x00"}},
		{"atomic replace keeps the new content", func(t *testing.T, fs *FS) {
			must(t, vfs.WriteFileAtomic(fs, "/d/a", []byte("v1"), 0o644))
			must(t, vfs.WriteFileAtomic(fs, "/d/a", []byte("v2"), 0o644))
		}, map[string]string{"/d/a": "v2"}},
		{"rename without a directory sync is undone", func(t *testing.T, fs *FS) {
			must(t, vfs.WriteFileAtomic(fs, "/d/a", []byte("v1"), 0o644))
			write(t, fs, "/d/tmp", "v2", 0, true)
			must(t, fs.SyncDir("/d"))
			must(t, fs.Rename("/d/tmp", "/d/a"))
		}, map[string]string{"/d/a": "v1", "/d/tmp": "v2"}},
		{"directory made without syncing its parent is gone", func(t *testing.T, fs *FS) {
			must(t, fs.MkdirAll("/d/x/y", 0o755))
			write(t, fs, "/d/x/y/f", "z", 0, true)
			must(t, fs.SyncDir("/d/x/y"))
		}, map[string]string{"/d/x/y/f": "<missing>"}},
		{"MkdirAllSynced makes the directories durable", func(t *testing.T, fs *FS) {
			must(t, vfs.MkdirAllSynced(fs, "/d/x/y", 0o755))
			write(t, fs, "/d/x/y/f", "z", 0, true)
			must(t, fs.SyncDir("/d/x/y"))
		}, map[string]string{"/d/x/y/f": "z"}},
		{"RemoveAll not synced brings the tree back", func(t *testing.T, fs *FS) {
			must(t, vfs.MkdirAllSynced(fs, "/d/x", 0o755))
			write(t, fs, "/d/x/f", "z", 0, true)
			must(t, fs.SyncDir("/d/x"))
			must(t, fs.RemoveAll("/d/x"))
		}, map[string]string{"/d/x/f": "z"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs := New()
			must(t, vfs.MkdirAllSynced(fs, "/d", 0o755))
			c.do(t, fs)
			after := fs.Crash()
			for path, want := range c.want {
				if got := content(t, after, path); got != want {
					t.Errorf("%s after crash = %q, want %q", path, got, want)
				}
			}
			// The crashed copy is itself fully durable: a second crash
			// changes nothing.
			again := after.Crash()
			for path, want := range c.want {
				if got := content(t, again, path); got != want {
					t.Errorf("%s after a second crash = %q, want %q", path, got, want)
				}
			}
		})
	}
}

// TestOldFSGoesOn checks that the crashed file system keeps working, apart
// from its copy.
func TestOldFSGoesOn(t *testing.T) {
	fs := New()
	must(t, vfs.MkdirAllSynced(fs, "/d", 0o755))
	f := write(t, fs, "/d/a", "one", 0, true)
	must(t, fs.SyncDir("/d"))
	l, err := fs.Lock("/d/LOCK")
	must(t, err)
	if _, err := fs.Lock("/d/LOCK"); !errors.Is(err, vfs.ErrLocked) {
		t.Fatalf("second lock: %v", err)
	}
	after := fs.Crash()
	_, err = f.WriteAt([]byte("two"), 0)
	must(t, err)
	must(t, f.Sync())
	if got := content(t, after, "/d/a"); got != "one" {
		t.Fatalf("copy changed by the old FS: %q", got)
	}
	if got := content(t, fs, "/d/a"); got != "two" {
		t.Fatalf("old FS: %q", got)
	}
	l2, err := after.Lock("/d/LOCK")
	must(t, err) // a crash releases every lock
	must(t, l2.Close())
	must(t, l.Close())
	if after.Crashes() != 1 || fs.Crashes() != 0 {
		t.Fatalf("crash counts %d %d", after.Crashes(), fs.Crashes())
	}
}

func TestLastSync(t *testing.T) {
	fs := New()
	must(t, fs.MkdirAll("/d", 0o755))
	f := write(t, fs, "/d/a", "x", 0, false)
	if _, ok := fs.LastSync("/d/a"); ok {
		t.Fatal("LastSync of a file never synced")
	}
	before := time.Now()
	must(t, f.Sync())
	at, ok := fs.LastSync("/d/a")
	if !ok || at.Before(before) || at.After(time.Now()) {
		t.Fatalf("LastSync = %v %v, want within the Sync call", at, ok)
	}
	if ops, n := fs.Unsynced(); ops != 2 || n != 0 { // mkdir d, create a
		t.Fatalf("Unsynced = %d ops, %d bytes", ops, n)
	}
}

// TestRandomCrash checks CrashRandom against its promise: every file is
// found with its synced bytes or later ones page by page, atomic replaces
// leave the old or the new file, never none.
func TestRandomCrash(t *testing.T) {
	seed := testSeed(t)
	t.Logf("seed %d", seed)
	for i := 0; i < 200; i++ {
		r := rand.New(rand.NewSource(seed + int64(i)))
		fs := New()
		must(t, vfs.MkdirAllSynced(fs, "/d", 0o755))
		old := bytes.Repeat([]byte{'o'}, 3*pageSize)
		f := write(t, fs, "/d/log", string(old), 0, true)
		must(t, fs.SyncDir("/d"))
		must(t, vfs.WriteFileAtomic(fs, "/d/meta", []byte("v1"), 0o644))
		newer := bytes.Repeat([]byte{'n'}, 5*pageSize)
		_, err := f.WriteAt(newer, pageSize)
		must(t, err)
		// replace meta without the final directory sync
		write(t, fs, "/d/meta.tmp", "v2", 0, true)
		must(t, fs.Rename("/d/meta.tmp", "/d/meta"))

		after := fs.CrashRandom(r)
		got := []byte(content(t, after, "/d/log"))
		if len(got) < len(old) || len(got) > pageSize+len(newer) {
			t.Fatalf("seed %d: log size %d", seed+int64(i), len(got))
		}
		for p := 0; p < len(got); p += pageSize {
			page := got[p:min(p+pageSize, len(got))]
			if p == 0 {
				if !bytes.Equal(page, old[:len(page)]) {
					t.Fatalf("seed %d: synced page 0 changed", seed+int64(i))
				}
				continue
			}
			o, n := bytes.Repeat([]byte{'o'}, len(page)), bytes.Repeat([]byte{'n'}, len(page))
			z := make([]byte, len(page))
			if !bytes.Equal(page, o) && !bytes.Equal(page, n) && !bytes.Equal(page, z) {
				t.Fatalf("seed %d: page %d mixed: %q", seed+int64(i), p/pageSize, page[:8])
			}
		}
		if m := content(t, after, "/d/meta"); m != "v1" && m != "v2" {
			t.Fatalf("seed %d: meta = %q", seed+int64(i), m)
		}
	}
}

// TestLikeOS runs the same random operations on the real file system and
// on crashfs and compares what both read back.
func TestLikeOS(t *testing.T) {
	seed := testSeed(t)
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewSource(seed))
	real := t.TempDir()
	mem := New()
	fss := []struct {
		fs   vfs.FS
		root string
	}{{vfs.OS{}, real}, {mem, "/data"}}
	for _, x := range fss {
		must(t, x.fs.MkdirAll(filepath.Join(x.root, "sub"), 0o755))
	}
	names := []string{"a", "b", "sub/c"}
	for step := 0; step < 2000; step++ {
		name := names[r.Intn(len(names))]
		op := r.Intn(6)
		off := int64(r.Intn(3 * pageSize))
		data := bytes.Repeat([]byte{byte('a' + r.Intn(26))}, r.Intn(2*pageSize))
		size := int64(r.Intn(3 * pageSize))
		sync := r.Intn(20) == 0
		var results []string
		for _, x := range fss {
			p := filepath.Join(x.root, name)
			var res string
			switch op {
			case 0, 1:
				f, err := x.fs.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o644)
				must(t, err)
				_, err = f.WriteAt(data, off)
				must(t, err)
				if sync {
					must(t, f.Sync())
				}
				must(t, f.Close())
			case 2:
				f, err := x.fs.OpenFile(p, os.O_RDWR, 0)
				if err == nil {
					must(t, f.Truncate(size))
					must(t, f.Close())
				}
				res = fmt.Sprint(errors.Is(err, os.ErrNotExist))
			case 3:
				err := x.fs.Remove(p)
				res = fmt.Sprint(errors.Is(err, os.ErrNotExist))
			case 4:
				err := x.fs.Rename(p, filepath.Join(x.root, names[(step+1)%len(names)]))
				res = fmt.Sprint(errors.Is(err, os.ErrNotExist))
			case 5:
				ents, err := x.fs.ReadDir(x.root)
				must(t, err)
				for _, e := range ents {
					res += fmt.Sprintf("%s:%v ", e.Name(), e.IsDir())
				}
			}
			b, err := vfs.ReadFile(x.fs, p)
			res += fmt.Sprintf("|%x|%v", bytes.TrimRight(b, "\x00"), errors.Is(err, os.ErrNotExist))
			if fi, err := x.fs.Stat(p); err == nil {
				res += fmt.Sprintf("|%d", fi.Size())
			}
			results = append(results, res)
		}
		if results[0] != results[1] {
			t.Fatalf("step %d op %d on %s: os %q, crashfs %q", step, op, name, results[0], results[1])
		}
	}
}

// testSeed is CRASHFS_SEED when set (to replay a failure), else the clock.
func testSeed(t *testing.T) int64 {
	if v := os.Getenv("CRASHFS_SEED"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		must(t, err)
		return n
	}
	return time.Now().UnixNano()
}

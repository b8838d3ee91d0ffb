package consumequeue

import (
	"testing"

	"github.com/wheelmq/wheelmq/storage/vfs"
	"github.com/wheelmq/wheelmq/storage/vfs/crashfs"
)

// TestCrashKeepsSyncedQueues crashes the file system (a strict crash:
// everything not synced is gone) after Sync: every queue made and synced
// is there, with its unit, directories and all (the store's own directory
// is made durable at Open).
func TestCrashKeepsSyncedQueues(t *testing.T) {
	fs := crashfs.New()
	if err := vfs.MkdirAllSynced(fs, "/d", 0o755); err != nil {
		t.Fatal(err)
	}
	s, err := Open("/d/cq", Options{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	for qid := int32(0); qid < 4; qid++ {
		q, err := s.Queue("T", qid)
		if err != nil {
			t.Fatal(err)
		}
		if err := q.Append(Unit{Offset: 100, Size: 10}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	after := fs.Crash()
	s2, err := Open("/d/cq", Options{FS: after})
	if err != nil {
		t.Fatal(err)
	}
	if len(s2.Queues()) != 4 {
		t.Fatalf("queues after crash: %v", s2.Queues())
	}
	for _, id := range s2.Queues() {
		if q := s2.Lookup(id.Topic, id.QueueID); q.MaxOffset() != 1 {
			t.Errorf("%v after crash holds %d units, want 1", id, q.MaxOffset())
		}
	}
}

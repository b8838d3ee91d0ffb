package consumequeue

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"
)

func TestAppendReadRoundTrip(t *testing.T) {
	tests := []struct {
		name      string
		upf       int
		n         int
		batch     int
		wantFiles int
	}{
		{"one unit", 3, 1, 1, 1},
		{"exactly one file", 3, 3, 1, 1},
		{"batch across files", 3, 10, 10, 4},
		{"small batches", 5, 23, 4, 5},
		{"default size", 0, 100, 32, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			s := mustOpen(t, dir, Options{UnitsPerFile: tt.upf})
			q := mustQueue(t, s, "TopicTest", 0)
			for i := 0; i < tt.n; i += tt.batch {
				mustAppend(t, q, unitsFrom(i, min(tt.batch, tt.n-i))...)
			}
			if q.MaxOffset() != int64(tt.n) || q.MinOffset() != 0 {
				t.Fatalf("min %d max %d, want 0 %d", q.MinOffset(), q.MaxOffset(), tt.n)
			}
			checkUnits(t, readAll(t, q), tt.n)
			for from := 0; from < tt.n; from++ { // every window
				got, err := q.Read(int64(from), 4)
				if err != nil {
					t.Fatal(err)
				}
				want := unitsFrom(from, min(4, tt.n-from))
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("Read(%d, 4) = %v, want %v", from, got, want)
				}
			}
			files := queueFiles(t, filepath.Join(dir, "TopicTest", "0"))
			if len(files) != tt.wantFiles {
				t.Fatalf("files %v, want %d", files, tt.wantFiles)
			}
			if last, ok := q.LastUnit(); !ok || last != unitsFrom(tt.n-1, 1)[0] {
				t.Fatalf("LastUnit = %+v, %v", last, ok)
			}
		})
	}
}

func TestReadBounds(t *testing.T) {
	s := mustOpen(t, t.TempDir(), Options{UnitsPerFile: 4})
	q := mustQueue(t, s, "T", 0)
	mustAppend(t, q, unitsFrom(0, 6)...)
	tests := []struct {
		name    string
		from    int64
		max     int
		want    int
		wantErr error
	}{
		{"all", 0, 6, 6, nil},
		{"more than stored", 2, 100, 4, nil},
		{"at max", 6, 10, 0, nil},
		{"zero max", 1, 0, 0, nil},
		{"negative max", 1, -1, 0, nil},
		{"huge max", 5, int(^uint(0) >> 1), 1, nil},
		{"past max", 7, 1, 0, ErrOutOfRange},
		{"negative", -1, 1, 0, ErrOutOfRange},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := q.Read(tt.from, tt.max)
			if !errors.Is(err, tt.wantErr) || len(got) != tt.want {
				t.Fatalf("Read(%d, %d) = %d units, %v; want %d, %v", tt.from, tt.max, len(got), err, tt.want, tt.wantErr)
			}
		})
	}
	empty := mustQueue(t, s, "T", 1)
	if got, err := empty.Read(0, 5); err != nil || len(got) != 0 {
		t.Fatalf("empty queue Read = %v, %v", got, err)
	}
	if _, ok := empty.LastUnit(); ok {
		t.Fatal("LastUnit of an empty queue")
	}
}

func TestAppendRejectsInvalidUnits(t *testing.T) {
	tests := []struct {
		name  string
		units []Unit
	}{
		{"negative offset", []Unit{{Offset: -1, Size: 10}}},
		{"zero size", []Unit{{Offset: 1000, Size: 0}}},
		{"negative size", []Unit{{Offset: 1000, Size: -5}}},
		{"not above previous append", []Unit{{Offset: 400, Size: 10}}},
		{"not increasing within batch", []Unit{{Offset: 1000, Size: 10}, {Offset: 1000, Size: 10}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustOpen(t, t.TempDir(), Options{UnitsPerFile: 4})
			q := mustQueue(t, s, "T", 0)
			mustAppend(t, q, unitsFrom(0, 5)...) // last offset 400
			if err := q.Append(tt.units...); !errors.Is(err, ErrInvalidUnit) {
				t.Fatalf("Append: %v, want ErrInvalidUnit", err)
			}
			if q.MaxOffset() != 5 {
				t.Fatalf("MaxOffset %d after rejected append", q.MaxOffset())
			}
		})
	}
}

func TestReopen(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{UnitsPerFile: 4})
	if err != nil {
		t.Fatal(err)
	}
	ids := []QueueID{{"%RETRY%group-a", 0}, {"TopicA", 0}, {"TopicA", 3}, {"TopicB", 12}}
	for i, id := range ids {
		mustAppend(t, mustQueue(t, s, id.Topic, id.QueueID), unitsFrom(0, 3+i*4)...)
	}
	mustQueue(t, s, "Empty", 1)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = mustOpen(t, dir, Options{UnitsPerFile: 4})
	want := []QueueID{ids[0], {"Empty", 1}, ids[1], ids[2], ids[3]} // byte order: '%' < 'E'

	if got := s.Queues(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Queues = %v, want %v", got, want)
	}
	for i, id := range ids {
		q := s.Lookup(id.Topic, id.QueueID)
		if q == nil {
			t.Fatalf("Lookup(%v) = nil", id)
		}
		checkUnits(t, readAll(t, q), 3+i*4)
		// The ordering check survives the reopen.
		if err := q.Append(Unit{Offset: 0, Size: 1}); !errors.Is(err, ErrInvalidUnit) {
			t.Fatalf("%v: Append below last unit: %v", id, err)
		}
		mustAppend(t, q, unitsFrom(3+i*4, 1)...)
	}
	if s.Lookup("Missing", 0) != nil {
		t.Fatal("Lookup of a missing queue")
	}
}

func TestQueueNames(t *testing.T) {
	s := mustOpen(t, t.TempDir(), Options{})
	tests := []struct {
		topic string
		id    int32
		want  error
	}{
		{"TopicTest", 0, nil},
		{"%DLQ%group|x_y-z", 7, nil},
		{strings.Repeat("a", 255), 0, nil},
		{"", 0, ErrInvalidTopic},
		{"..", 0, ErrInvalidTopic},
		{"a/b", 0, ErrInvalidTopic},
		{"../escape", 0, ErrInvalidTopic},
		{"with space", 0, ErrInvalidTopic},
		{"dot.topic", 0, ErrInvalidTopic},
		{strings.Repeat("a", 256), 0, ErrInvalidTopic},
		{"TopicTest", -1, ErrInvalidQueueID},
	}
	for _, tt := range tests {
		if _, err := s.Queue(tt.topic, tt.id); !errors.Is(err, tt.want) {
			t.Errorf("Queue(%.20q, %d): %v, want %v", tt.topic, tt.id, err, tt.want)
		}
	}
}

func TestOpenIgnoresForeignEntries(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"bad.topic/0", "TopicA/x", "TopicA/01", "TopicA/-1", "TopicA/0"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"README", "TopicA/notes", "TopicA/0/00000000000000000000.tmp"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s := mustOpen(t, dir, Options{UnitsPerFile: 4})
	if got, want := s.Queues(), []QueueID{{"TopicA", 0}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("Queues = %v, want %v", got, want)
	}
}

func TestLayoutMismatch(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{UnitsPerFile: 4})
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, mustQueue(t, s, "T", 0), unitsFrom(0, 9)...)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir, Options{UnitsPerFile: 3}); !errors.Is(err, ErrLayout) {
		t.Fatalf("Open with other UnitsPerFile: %v", err)
	}
	if _, err := Open(dir, Options{UnitsPerFile: -1}); !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("negative UnitsPerFile: %v", err)
	}
}

func TestDeleteTopic(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, dir, Options{UnitsPerFile: 4})
	q := mustQueue(t, s, "Gone", 0)
	mustAppend(t, q, unitsFrom(0, 6)...)
	mustAppend(t, mustQueue(t, s, "Gone", 1), unitsFrom(0, 2)...)
	keep := mustQueue(t, s, "Kept", 0)
	mustAppend(t, keep, unitsFrom(0, 2)...)

	if err := s.DeleteTopic("Gone"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "Gone")); !os.IsNotExist(err) {
		t.Fatalf("topic directory still there: %v", err)
	}
	if got := s.Queues(); !reflect.DeepEqual(got, []QueueID{{"Kept", 0}}) {
		t.Fatalf("Queues = %v", got)
	}
	if err := q.Append(unitsFrom(6, 1)...); !errors.Is(err, ErrClosed) {
		t.Fatalf("Append on deleted queue: %v", err)
	}
	if _, err := q.Read(0, 1); !errors.Is(err, ErrClosed) {
		t.Fatalf("Read on deleted queue: %v", err)
	}
	if err := s.DeleteTopic("NeverExisted"); err != nil {
		t.Fatalf("deleting an unknown topic: %v", err)
	}
	fresh := mustQueue(t, s, "Gone", 0)
	if fresh.MaxOffset() != 0 {
		t.Fatalf("recreated queue MaxOffset %d", fresh.MaxOffset())
	}
	checkUnits(t, readAll(t, keep), 2)
}

func TestClosedStore(t *testing.T) {
	s, err := Open(t.TempDir(), Options{UnitsPerFile: 4})
	if err != nil {
		t.Fatal(err)
	}
	q := mustQueue(t, s, "T", 0)
	mustAppend(t, q, unitsFrom(0, 3)...)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := q.Append(unitsFrom(3, 1)...); !errors.Is(err, ErrClosed) {
		t.Fatalf("Append after Close: %v", err)
	}
	if _, err := s.Queue("T", 1); !errors.Is(err, ErrClosed) {
		t.Fatalf("Queue after Close: %v", err)
	}
	if err := s.Close(); !errors.Is(err, ErrClosed) {
		t.Fatalf("second Close: %v", err)
	}
}

// TestConcurrentReadDuringAppend has readers follow the dispatcher while it
// appends and a flusher syncs (run with -race).
func TestConcurrentReadDuringAppend(t *testing.T) {
	s := mustOpen(t, t.TempDir(), Options{UnitsPerFile: 64})
	q := mustQueue(t, s, "T", 0)
	const total = 3000
	done := make(chan struct{})
	errc := make(chan error, 8)
	var wg sync.WaitGroup
	for r := 0; r < 3; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			next := int64(0)
			for next < total {
				got, err := q.Read(next, 50)
				if err != nil {
					errc <- err
					return
				}
				for i, u := range got {
					if want := unitsFrom(int(next)+i, 1)[0]; u != want {
						errc <- errors.New("unit mismatch")
						return
					}
				}
				next += int64(len(got))
				if len(got) == 0 {
					runtime.Gosched()
				}
				if s.Lookup("T", 0) != q {
					errc <- errors.New("Lookup returned another queue")
					return
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			if err := s.Sync(); err != nil {
				errc <- err
				return
			}
		}
	}()
	for i := 0; i < total; i += 7 {
		mustAppend(t, q, unitsFrom(i, min(7, total-i))...)
	}
	close(done)
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
}

// TestSyncDuringDeleteTopic runs Store.Sync while topics are created, filled
// and deleted (run with -race): Sync must not report deleted queues.
func TestSyncDuringDeleteTopic(t *testing.T) {
	s := mustOpen(t, t.TempDir(), Options{UnitsPerFile: 4})
	done := make(chan struct{})
	errc := make(chan error, 1)
	go func() {
		defer close(errc)
		for {
			select {
			case <-done:
				return
			default:
			}
			if err := s.Sync(); err != nil {
				errc <- err
				return
			}
		}
	}()
	for i := 0; i < 20; i++ {
		q := mustQueue(t, s, "Churn", int32(i%3))
		mustAppend(t, q, unitsFrom(0, 6)...)
		if err := s.DeleteTopic("Churn"); err != nil {
			t.Fatal(err)
		}
	}
	close(done)
	if err := <-errc; err != nil {
		t.Fatalf("Sync: %v", err)
	}
}

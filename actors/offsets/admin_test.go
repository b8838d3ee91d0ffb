package offsets

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/stage"
	"github.com/wheelmq/wheelmq/actors/supervisor"
)

// call sends a message built around a reply and waits for it.
func call[T any](t *testing.T, s *stage.Stage, msg func(reply func(T)) any) T {
	t.Helper()
	ch := make(chan T, 1)
	s.Send(msg(func(v T) { ch <- v }))
	select {
	case v := <-ch:
		return v
	case <-time.After(wait):
		t.Fatal("not answered")
		var zero T
		return zero
	}
}

func TestResetGroupOffsetsDropGroup(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "config")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	sys := stage.NewSystem(zerolog.Nop())
	t.Cleanup(sys.Shutdown)
	var view ResetView
	s, err := stage.NewRegistry(prometheus.NewRegistry()).Spawn(sys, supervisor.New(supervisor.Policy{}), StageName,
		Producer(Options{Path: filepath.Join(dir, "consumerOffset.json"), Resets: &view}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	offsets := func(group string, topics []string) map[string]map[int32]int64 {
		return call(t, s, func(reply func(map[string]map[int32]int64)) any {
			return &GroupOffsets{Group: group, Topics: topics, Reply: reply}
		})
	}
	s.Send(&Commit{Group: "G", Topic: "T", QueueID: 0, Offset: 10})
	s.Send(&Commit{Group: "G", Topic: "T", QueueID: 1, Offset: 20})
	s.Send(&Commit{Group: "G", Topic: "U", QueueID: 0, Offset: 5})
	s.Send(&Commit{Group: "H", Topic: "T", QueueID: 0, Offset: 1})
	if got := offsets("G", nil); !reflect.DeepEqual(got, map[string]map[int32]int64{"T": {0: 10, 1: 20}, "U": {0: 5}}) {
		t.Fatalf("GroupOffsets(G) = %v", got)
	}
	if got := offsets("G", []string{"T", "V"}); !reflect.DeepEqual(got, map[string]map[int32]int64{"T": {0: 10, 1: 20}, "V": {}}) {
		t.Fatalf("GroupOffsets(G, T V) = %v", got)
	}

	call(t, s, func(reply func(struct{})) any {
		return &Reset{Group: "G", Topic: "T", Offsets: map[int32]int64{0: 2, 1: 3}, Done: func() { reply(struct{}{}) }}
	})
	if !view.Pending("G", "T", 0) || !view.Pending("G", "T", 1) || view.Pending("H", "T", 0) {
		t.Fatal("pending resets not published")
	}
	// The consumer's commit of its old position is ignored while pending.
	s.Send(&Commit{Group: "G", Topic: "T", QueueID: 0, Offset: 11})
	if got := offsets("G", []string{"T"})["T"]; !reflect.DeepEqual(got, map[int32]int64{0: 2, 1: 3}) {
		t.Fatalf("after reset: %v", got)
	}
	type taken struct {
		off int64
		ok  bool
	}
	take := func(q int32) taken {
		return call(t, s, func(reply func(taken)) any {
			return &TakeReset{Group: "G", Topic: "T", QueueID: q, Reply: func(o int64, ok bool) { reply(taken{o, ok}) }}
		})
	}
	if got := take(0); got != (taken{2, true}) {
		t.Fatalf("first take = %+v", got)
	}
	if got := take(0); got.ok {
		t.Fatalf("second take = %+v, want none", got)
	}
	if view.Pending("G", "T", 0) || !view.Pending("G", "T", 1) {
		t.Fatal("view not updated after take")
	}
	s.Send(&Commit{Group: "G", Topic: "T", QueueID: 0, Offset: 4}) // accepted again
	s.Send(&DropGroup{Group: "H"})
	if got := offsets("G", []string{"T"})["T"]; got[0] != 4 {
		t.Fatalf("commit after take: %v", got)
	}
	if got := offsets("H", nil); len(got) != 0 {
		t.Fatalf("H after DropGroup: %v", got)
	}
}

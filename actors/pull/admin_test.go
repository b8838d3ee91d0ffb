package pull

import (
	"reflect"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/storage"
)

func callPull[T any](t *testing.T, r *rig, msg func(reply func(T)) any) T {
	t.Helper()
	ch := make(chan T, 1)
	r.p.Send(msg(func(v T) { ch <- v }))
	select {
	case v := <-ch:
		return v
	case <-time.After(wait):
		t.Fatal("not answered")
		var zero T
		return zero
	}
}

func TestStoreTimesSearchQueuesAndPulled(t *testing.T) {
	r := newRig(t, storage.Options{})
	type served struct {
		group, topic string
		msgs         int
	}
	var counted []served
	r.startWith(t, Options{Served: func(g, tp string, n, _ int) { counted = append(counted, served{g, tp, n}) }})
	for i := int64(0); i < 5; i++ {
		r.put(t, "T", 0, "a", 1000+i*10)
	}
	r.put(t, "T", 1, "a", 5000)

	if resp := r.pull(t, request("T", 0, 1, 3, "*")); resp.Next != 4 {
		t.Fatalf("pull: %+v", resp)
	}
	if resp := r.pull(t, request("T", 0, 5, 3, "*")); resp.Outcome == Found {
		t.Fatalf("pull at the end found messages: %+v", resp)
	}
	got := callPull(t, r, func(reply func([]QueueProgress)) any {
		return &StoreTimes{Group: "G", Reply: reply, Positions: []QueuePos{
			{"T", 0, 0}, {"T", 0, 4}, {"T", 0, 5}, {"T", 0, -1}, {"T", 1, 0}, {"U", 0, 0}}}
	})
	want := []QueueProgress{{1000, 4}, {1040, 4}, {-1, 4}, {-1, 4}, {5000, -1}, {-1, -1}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("StoreTimes = %v, want %v", got, want)
	}
	if want := []served{{"G", "T", 3}, {"G", "T", 0}}; !reflect.DeepEqual(counted, want) {
		t.Errorf("served %v, want %v", counted, want)
	}
	offs := callPull(t, r, func(reply func(map[int32]int64)) any {
		return &SearchQueues{Topic: "T", Queues: []int32{0, 1, 2}, Timestamp: 1015, Reply: reply}
	})
	if want := map[int32]int64{0: 2, 1: 0, 2: 0}; !reflect.DeepEqual(offs, want) {
		t.Errorf("SearchQueues(1015) = %v, want %v", offs, want)
	}
	offs = callPull(t, r, func(reply func(map[int32]int64)) any {
		return &SearchQueues{Topic: "T", Queues: []int32{0, 1, 2}, Timestamp: -1, Reply: reply}
	})
	if want := map[int32]int64{0: 5, 1: 1, 2: 0}; !reflect.DeepEqual(offs, want) {
		t.Errorf("SearchQueues(-1) = %v, want %v", offs, want)
	}
}

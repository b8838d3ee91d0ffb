package router

import (
	"slices"
	"testing"
)

func TestAllocateQueues(t *testing.T) {
	qs := func(n int) []assignedQueue {
		out := make([]assignedQueue, n)
		for i := range out {
			out[i] = assignedQueue{Topic: "t", BrokerName: "b", QueueID: int32(i)}
		}
		return out
	}
	ids := func(q []assignedQueue) []int32 {
		var out []int32
		for _, a := range q {
			out = append(out, a.QueueID)
		}
		return out
	}
	for _, tt := range []struct {
		strategy string
		queues   int
		clients  []string
		client   string
		want     []int32
	}{
		{strategyAverage, 8, []string{"a", "b", "c"}, "a", []int32{0, 1, 2}},
		{strategyAverage, 8, []string{"a", "b", "c"}, "b", []int32{3, 4, 5}},
		{strategyAverage, 8, []string{"a", "b", "c"}, "c", []int32{6, 7}},
		{strategyAverage, 2, []string{"a", "b", "c"}, "c", nil},
		{strategyAverage, 4, []string{"a", "b"}, "b", []int32{2, 3}},
		{strategyAverageCircle, 8, []string{"a", "b", "c"}, "b", []int32{1, 4, 7}},
		{strategyAverage, 4, []string{"a", "b"}, "stranger", nil},
	} {
		got := ids(allocateQueues(tt.strategy, qs(tt.queues), tt.clients, tt.client))
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s %d queues %v client %s: %v, want %v", tt.strategy, tt.queues, tt.clients, tt.client, got, tt.want)
		}
	}
	// Every queue goes to exactly one client.
	for n := 1; n <= 9; n++ {
		for m := 1; m <= 5; m++ {
			clients := []string{"a", "b", "c", "d", "e"}[:m]
			seen := map[int32]int{}
			for _, c := range clients {
				for _, q := range allocateQueues(strategyAverage, qs(n), clients, c) {
					seen[q.QueueID]++
				}
			}
			if len(seen) != n {
				t.Fatalf("%d queues over %d clients: %d assigned", n, m, len(seen))
			}
			for q, k := range seen {
				if k != 1 {
					t.Fatalf("%d queues over %d clients: queue %d assigned %d times", n, m, q, k)
				}
			}
		}
	}
}

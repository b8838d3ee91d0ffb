package ha

import "testing"

func TestConsistentPoint(t *testing.T) {
	for _, tc := range []struct {
		name          string
		local, master []Epoch
		localMax      int64
		want          int64
	}{
		{"both empty", nil, nil, 0, 0},
		{"fresh replica", nil, []Epoch{{1, 0}}, 0, 0},
		{"same epoch, replica behind", []Epoch{{1, 0}}, []Epoch{{1, 0}}, 500, 500},
		{"replica behind, master moved on", []Epoch{{1, 0}}, []Epoch{{1, 0}, {2, 800}}, 500, 500},
		{"divergent tail of old master", []Epoch{{1, 0}, {2, 800}}, []Epoch{{1, 0}, {3, 600}}, 1000, 600},
		{"old epoch longer locally", []Epoch{{1, 0}}, []Epoch{{1, 0}, {2, 300}}, 1000, 300},
		{"replica ahead within same last epoch", []Epoch{{1, 0}, {2, 100}}, []Epoch{{1, 0}, {2, 100}}, 900, 900},
		{"same epoch number, other start", []Epoch{{1, 0}, {2, 100}}, []Epoch{{1, 0}, {2, 150}}, 900, 100},
		{"middle epoch common", []Epoch{{1, 0}, {2, 100}, {4, 400}}, []Epoch{{1, 0}, {2, 100}, {3, 300}, {5, 700}}, 600, 300},
		{"no common epoch", []Epoch{{1, 0}}, []Epoch{{2, 0}}, 100, -1},
		{"replica without epochs but data", nil, []Epoch{{1, 0}}, 100, -1},
		{"empty epoch at the cut", []Epoch{{1, 0}, {2, 500}}, []Epoch{{1, 0}, {2, 500}, {3, 500}}, 500, 500},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ConsistentPoint(tc.local, tc.master, tc.localMax); got != tc.want {
				t.Fatalf("ConsistentPoint = %d, want %d", got, tc.want)
			}
		})
	}
}

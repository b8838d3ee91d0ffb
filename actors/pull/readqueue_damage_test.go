package pull

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/wheelmq/wheelmq/storage"
	"github.com/wheelmq/wheelmq/storage/consumequeue"
	"github.com/wheelmq/wheelmq/storage/corruption"
)

// TestReadQueueOverDamage reads a damaged message and a damaged unit by
// queue offset: the look-up applies the pull path's rule (Unreadable): a
// damaged message is counted under on-corruption=skip and named under
// stop, a damaged unit is reported for a rebuild; the neighbours read.
func TestReadQueueOverDamage(t *testing.T) {
	for _, tc := range []struct {
		name    string
		policy  corruption.Policy
		damage  string
		remark  string
		counted bool
	}{
		{"damaged message, skip", corruption.PolicySkip, "message", "skipped by consumers (on-corruption=skip)", true},
		{"damaged message, stop", corruption.PolicyStop, "message", "is damaged (on-corruption=stop)", false},
		{"damaged unit", corruption.PolicySkip, "unit", "being rebuilt", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := corruption.NewMetrics(prometheus.NewRegistry())
			r := newRig(t, storage.Options{OnCorruption: tc.policy, Corruption: m})
			for i := 0; i < 3; i++ {
				r.put(t, "T", 0, "", int64(i))
			}
			u, err := r.st.Queues.Lookup("T", 0).Read(1, 1)
			if err != nil {
				t.Fatal(err)
			}
			if tc.damage == "message" {
				flipAt(t, filepath.Join(r.st.CommitLog.Dir(), fmt.Sprintf("%020d", 0)), u[0].Offset+int64(u[0].Size)-6)
			} else {
				flipAt(t, filepath.Join(r.dir, "consumequeue", "T", "0", fmt.Sprintf("%020d", 0)), consumequeue.UnitSize+6)
			}
			r.start(t, 0)
			type answer struct {
				rec []byte
				err error
			}
			read := func(off int64) answer {
				return callPull(t, r, func(reply func(answer)) any {
					return &ReadQueue{Pos: QueuePos{"T", 0, off}, Reply: func(rec []byte, err error) { reply(answer{append([]byte(nil), rec...), err}) }}
				})
			}
			a := read(1)
			if !errors.Is(a.err, ErrUnreadable) || !strings.Contains(a.err.Error(), tc.remark) {
				t.Fatalf("offset 1: %v, want ErrUnreadable with %q", a.err, tc.remark)
			}
			for _, off := range []int64{0, 2} {
				if a := read(off); a.err != nil || len(a.rec) == 0 {
					t.Fatalf("offset %d: %v", off, a.err)
				}
			}
			if got := m.Counted(corruption.FileCommitLog) > 0; got != tc.counted {
				t.Fatalf("commitlog damage counted: %v, want %v", got, tc.counted)
			}
			damaged := r.st.TakeDamagedUnits()
			if (damaged[consumequeue.QueueID{Topic: "T", QueueID: 0}] == 1) != (tc.damage == "unit") {
				t.Fatalf("damaged units reported %v (damage %s)", damaged, tc.damage)
			}
		})
	}
}

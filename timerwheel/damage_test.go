package timerwheel

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/wheelmq/wheelmq/storage/corruption"
	"github.com/wheelmq/wheelmq/timerwheel/timerlog"
)

// TestDamagedChainRecord damages one TimerLog record in the middle of a
// slot chain (near and far, with records of another slot interleaved):
// under skip only that timer is lost, the chain goes on at the previous
// record of its slot and the record's bytes are counted once; under stop
// the store fails with corruption.ErrStop. In "walked together" the other
// records sit in slots loaded with the chain's (one walk down the log).
func TestDamagedChainRecord(t *testing.T) {
	const hour = int64(3_600_000)
	for _, tc := range []struct {
		name   string
		policy corruption.Policy
		at     int64 // delivery time of the chain's timers
		gap    int64 // the other timers are due at+gap+i*10 (i = 1..20)
	}{
		{"near slot, skip", corruption.PolicySkip, T0 + 5000, 1000},
		{"near slots walked together, skip", corruption.PolicySkip, T0 + 5000, -200},
		{"far bucket, skip", corruption.PolicySkip, T0 + 3*hour, 1000},
		{"near slot, stop", corruption.PolicyStop, T0 + 5000, 1000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.gap < 0 { // a handful of timers: make them count as a burst
				old := loadAheadMin
				loadAheadMin = 1
				t.Cleanup(func() { loadAheadMin = old })
			}
			dir := t.TempDir()
			opts := testOptions(dir)
			s, err := Open(opts, T0)
			if err != nil {
				t.Fatal(err)
			}
			// The chain's timers (odd ids) share one slot; the even ones
			// sit in slots of their own between them. Timer id is seq id
			// (queue offsets must grow: Add skips replays).
			for i := int64(1); i <= 20; i++ {
				mustAdd(t, s, T0, timerAt(2*i-1, tc.at))
				mustAdd(t, s, T0, timerAt(2*i, tc.at+tc.gap+i*10))
			}
			must(t, s.Close())
			const victim = 19
			seg := filepath.Join(dir, logDirName, "00000000000000000001")
			data, err := os.ReadFile(seg)
			if err != nil {
				t.Fatal(err)
			}
			data[(victim-1)*timerlog.EntrySize+60] ^= 0x20
			must(t, os.WriteFile(seg, data, 0o640))

			opts.OnCorruption = tc.policy
			opts.Corruption = corruption.NewMetrics(prometheus.NewRegistry())
			s2 := openStore(t, opts, T0)
			if tc.policy == corruption.PolicyStop {
				_, err := s2.Due(tc.at+10, 1000)
				if !errors.Is(err, corruption.ErrStop) || !errors.Is(err, ErrFailed) {
					t.Fatalf("Due over the damage: %v, want ErrStop and ErrFailed", err)
				}
				return
			}
			h := newHarness(t, s2)
			h.run(T0, tc.at+2000)
			got := h.delivered()
			for id := int64(1); id <= 40; id++ {
				want := 1
				if id == victim {
					want = 0
				}
				if got[id] != want {
					t.Fatalf("timer %d delivered %d times, want %d (delivered: %v)", id, got[id], want, got)
				}
			}
			if n := opts.Corruption.Counted(corruption.FileTimerLog); n != timerlog.EntrySize {
				t.Fatalf("counted %d damaged bytes, want one entry's %d", n, timerlog.EntrySize)
			}
			if st := s2.Stats(); st.Corrupt == 0 {
				t.Fatalf("Stats.Corrupt not counted: %+v", st)
			}
		})
	}
}

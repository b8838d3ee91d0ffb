package timer

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/dispatch"
	"github.com/wheelmq/wheelmq/actors/stage"
	"github.com/wheelmq/wheelmq/actors/supervisor"
	"github.com/wheelmq/wheelmq/actors/writer"
	"github.com/wheelmq/wheelmq/storage"
	"github.com/wheelmq/wheelmq/storage/consumequeue"
	"github.com/wheelmq/wheelmq/storage/corruption"
	"github.com/wheelmq/wheelmq/storage/message"
	"github.com/wheelmq/wheelmq/timerwheel"
)

// flipFile inverts one byte of a file in place.
func flipFile(t *testing.T, path string, pos int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, pos); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x5a
	if _, err := f.WriteAt(b, pos); err != nil {
		t.Fatal(err)
	}
}

// counterValue returns a registered counter's value for one label pair.
func counterValue(t *testing.T, reg *prometheus.Registry, name, label, value string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == value {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// TestEnqueueOverDamage feeds the enqueue side a timer queue with a damaged
// unit (rebuilt by the dispatcher, then every timer arrives) or a damaged
// message (skipped and counted, the others arrive).
func TestEnqueueOverDamage(t *testing.T) {
	for _, tc := range []struct {
		name      string
		damage    string
		wantAdded uint64
	}{
		{"damaged unit is rebuilt", "unit", 10},
		{"damaged message is skipped", "message", 9},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			cm := corruption.NewMetrics(reg)
			st, err := storage.Open(t.TempDir(), storage.Options{Corruption: cm})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = st.Close() })
			now := time.Now()
			host := netip.MustParseAddrPort("10.0.0.1:1")
			var units []consumequeue.Unit
			for i := 0; i < 10; i++ {
				props := map[string]string{message.PropRealTopic: "orders", message.PropRealQueueID: "0",
					message.PropUniqKey:    fmt.Sprintf("U%d", i),
					message.PropTimerOutMS: strconv.FormatInt(now.Add(time.Hour).UnixMilli(), 10)}
				rec, err := (&message.Record{Topic: Topic, QueueOffset: int64(i), BornHost: host, StoreHost: host,
					Body: []byte("later"), Properties: message.EncodeProperties(props)}).Encode(nil)
				if err != nil {
					t.Fatal(err)
				}
				offs, err := st.CommitLog.Append([][]byte{rec})
				if err != nil {
					t.Fatal(err)
				}
				units = append(units, consumequeue.Unit{Offset: offs[0], Size: int32(len(rec))})
			}
			q, err := st.Queues.Queue(Topic, 0)
			if err != nil {
				t.Fatal(err)
			}
			if err := q.Append(units...); err != nil {
				t.Fatal(err)
			}
			st.Dispatched.Store(st.CommitLog.MaxOffset())
			switch tc.damage {
			case "unit":
				flipFile(t, filepath.Join(st.Dir, "consumequeue", Topic, "0", fmt.Sprintf("%020d", 0)),
					4*consumequeue.UnitSize+6)
			case "message":
				flipFile(t, filepath.Join(st.CommitLog.Dir(), fmt.Sprintf("%020d", 0)), units[6].Offset+40)
			}

			wheel, err := timerwheel.Open(timerwheel.Options{Dir: st.TimerDir(), NoSync: true}, now.UnixMilli())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = wheel.Close() })
			sys := stage.NewSystem(zerolog.Nop())
			t.Cleanup(sys.Shutdown)
			sm := stage.NewRegistry(prometheus.NewRegistry())
			strat := supervisor.New(supervisor.Policy{Initial: time.Millisecond, Max: 2 * time.Millisecond})
			var k dispatch.Kicker
			d, err := sm.Spawn(sys, strat, dispatch.StageName, dispatch.Producer(dispatch.Options{Store: st}, &k))
			if err != nil {
				t.Fatal(err)
			}
			k.Bind(d)
			t.Cleanup(d.Stop)
			tm := NewMetrics(reg)
			svc, err := Start(sys, sm, strat, Options{Store: st, Wheel: wheel, Append: func(*writer.Append) {}, Metrics: tm})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(svc.Stop)
			deadline := time.Now().Add(5 * time.Second)
			for wheel.Stats().Added != tc.wantAdded || wheel.Checkpoint().EnqueueQueueOffset != 9 {
				if time.Now().After(deadline) {
					t.Fatalf("wheel added %d timers up to queue offset %d, want %d up to 9",
						wheel.Stats().Added, wheel.Checkpoint().EnqueueQueueOffset, tc.wantAdded)
				}
				time.Sleep(2 * time.Millisecond)
			}
			corrupt := counterValue(t, reg, "wheelmq_timer_skipped_total", "reason", "corrupt")
			cqBytes := cm.Counted(corruption.FileConsumeQueue)
			clBytes := cm.Counted(corruption.FileCommitLog)
			switch tc.damage {
			case "unit":
				if corrupt != 0 || cqBytes != consumequeue.UnitSize || clBytes != 0 {
					t.Fatalf("skipped %v, counted %d queue and %d log bytes; want 0, 20, 0", corrupt, cqBytes, clBytes)
				}
			case "message":
				if corrupt != 1 || clBytes != int64(units[6].Size)+4 || cqBytes != 0 {
					t.Fatalf("skipped %v, counted %d log and %d queue bytes; want 1, %d, 0", corrupt, clBytes, cqBytes, units[6].Size+4)
				}
			}
		})
	}
}

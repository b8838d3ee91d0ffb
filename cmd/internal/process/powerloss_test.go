package process_test

// Power-loss torture: a broker in this process whose every file lives on
// storage/vfs/crashfs, under load from the official Go client (plain sends,
// timer messages, transactions committed and rolled back, a consumer
// committing offsets), crashed at a random moment: the file system forgets
// everything not synced (a strict crash), or keeps an arbitrary part of it
// (pages written back, a prefix of the directory changes), as an operating
// system crash or a power cut leaves a disk, which SIGKILL does not. A new
// broker opens what survived; loop after loop, in both flush modes. The
// checks (docs/operations.md, "What survives what"):
//
//   - sync flush: every send acknowledged before the crash is there; async
//     flush: every send acknowledged before the last completed fsync of its
//     CommitLog segment;
//   - no message is stored twice (every send has its own body and the
//     client does not retry);
//   - consumer offsets never point past their queue's end;
//   - timers: none delivered before its due time, none twice, every one
//     that had to survive delivered;
//   - transactions: none rolled back is delivered, every committed one whose
//     half message had to survive is delivered (by its END_TRANSACTION or
//     by a check), none twice.
//
// README's test command runs WHEELMQ_POWERLOSS_LOOPS=3 crashes per flush
// mode (the default); `task torture:powerloss LOOPS=50` runs long. Every
// crash's choices come from a seed the test logs (WHEELMQ_POWERLOSS_SEED
// replays a run's crashes; the load's timing is the machine's).

import (
	"context"
	"math/rand"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/rlog"

	"github.com/wheelmq/wheelmq/actors/pipeline"
	"github.com/wheelmq/wheelmq/actors/writer"
	"github.com/wheelmq/wheelmq/cmd/internal/process"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/storage/vfs/crashfs"
)

const (
	plTopic      = "pl_plain"
	plTimerTopic = "pl_timer"
	plTxTopic    = "pl_tx"
	plQueues     = 4
	plGroup      = "pl_consumer"
	plTxGroup    = "pl_tx_producer"
	plDataDir    = "/powerloss/data" // inside the crash file system
	plSegSize    = 8 << 20
	plMaxDelayMs = 2500
)

// envInt reads a positive integer from the environment (def when unset).
func envInt(t *testing.T, name string, def int64) int64 {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a positive number", name, v)
	}
	return n
}

func TestPowerLoss(t *testing.T) {
	if testing.Short() {
		t.Skip("power-loss torture is not short")
	}
	loops := int(envInt(t, "WHEELMQ_POWERLOSS_LOOPS", 3))
	seed := envInt(t, "WHEELMQ_POWERLOSS_SEED", time.Now().UnixNano())
	t.Logf("seed %d (WHEELMQ_POWERLOSS_SEED=%d replays the crashes), %d crashes per flush mode", seed, seed, loops)
	// The Go client logs every rolled-back local transaction as an error
	// ("executeLocalTransaction but state unexpected"): half the load here.
	processtest.QuietClient() // once: it would set "error" again later
	rlog.SetLogLevel("fatal")
	t.Cleanup(func() { rlog.SetLogLevel("error") })
	for i, mode := range []writer.FlushMode{writer.FlushSync, writer.FlushAsync} {
		t.Run(mode.String(), func(t *testing.T) {
			r := &plRun{t: t, mode: mode, rng: rand.New(rand.NewSource(seed + int64(i))), fs: crashfs.New(),
				outcomes: map[string]bool{}}
			r.run(loops)
		})
	}
}

// plRun is one flush mode's run.
type plRun struct {
	t     *testing.T
	mode  writer.FlushMode
	rng   *rand.Rand
	fs    *crashfs.FS
	hist  plHistory
	stats plStats

	mu       sync.Mutex
	outcomes map[string]bool // transaction id -> commit
}

// start opens a broker on the run's file system.
func (r *plRun) start() *process.Node {
	return processtest.Start(r.t, processtest.Options{Dir: plDataDir, Mutate: func(c *pipeline.Config) {
		c.StoreFS, c.Flush, c.SegmentSize = r.fs, r.mode, plSegSize
		c.TransactionTimeout, c.TransactionCheckInterval, c.TransactionTick = 300*time.Millisecond, 300*time.Millisecond, 50*time.Millisecond
		c.OffsetFlushInterval = 100 * time.Millisecond
	}})
}

func (r *plRun) run(loops int) {
	t := r.t
	n := r.start()
	for _, topic := range []string{plTopic, plTimerTopic, plTxTopic} {
		processtest.CreateTopic(t, n, topic, plQueues)
	}
	for loop := 1; loop <= loops; loop++ {
		stop := r.load(n, loop)
		time.Sleep(time.Duration(400+r.rng.Intn(800)) * time.Millisecond)
		crashAt := time.Now()
		var after *crashfs.FS
		how := "strict"
		if loop%2 == 0 {
			after, how = r.fs.CrashRandom(rand.New(rand.NewSource(r.rng.Int63()))), "random"
			r.stats.random++
		} else {
			after = r.fs.Crash()
			r.stats.strict++
		}
		stop()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		_ = n.Stop(ctx) // on the old file system: nothing it writes now is read again
		cancel()
		acked, must := r.hist.crashed(loop, crashAt, r.mode, after, plDataDir, plSegSize)
		r.stats.loops++
		r.stats.acked += acked
		r.stats.must += must
		t.Logf("crash %d (%s) at %d: %d sends acknowledged before it, %d had to survive", loop, how, crashAt.UnixMilli(), acked, must)
		r.fs = after
		n = r.start()
		r.checkPlain(n)
		r.checkOffsets(n)
	}
	r.finish(n)
	t.Logf("%s: %v", r.mode, r.stats)
}

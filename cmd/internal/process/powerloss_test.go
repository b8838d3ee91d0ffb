package process_test

// Power-loss torture: a broker in this process whose every file lives on
// storage/vfs/crashfs, under load from the official Go client (plain sends,
// timer messages, transactions committed and rolled back, a consumer
// committing offsets) and a POP consumer (powerloss_pop_test.go), crashed at
// a random moment: the file system forgets everything not synced (a strict
// crash), or keeps an arbitrary part of it (pages written back, a prefix of
// the directory changes), as an operating system crash or a power cut
// leaves a disk, which SIGKILL does not; or it reorders (CrashReorder): each
// file other than the CommitLog's keeps, independently, a random prefix of
// its writes since its last sync, so consume queues, the index, timer and
// transaction state may keep writes the CommitLog lost, as a disk with a
// volatile cache leaves them; half of those crashes tear the CommitLog's own
// unsynced writes too. A new broker opens what survived; loop after loop,
// in both flush modes. The checks (docs/operations.md, "What survives
// what"):
//
//   - sync flush: every send acknowledged before the crash is there; async
//     flush: every send acknowledged before the last completed fsync of its
//     CommitLog segment;
//   - no message is stored twice (every send has its own body and the
//     client does not retry), none is held that no send made (a derived
//     position ahead of the log served);
//   - consumer offsets never point past their queue's end;
//   - timers: none delivered before its due time, none twice, every one
//     that had to survive delivered;
//   - transactions: none rolled back is delivered, every committed one whose
//     half message had to survive is delivered (by its END_TRANSACTION or
//     by a check), none twice;
//   - POP: nothing acked delivered again, nothing redelivered before its
//     invisible time, nothing delivered that the recovered log does not
//     hold (powerloss_pop_test.go);
//   - the corrections each start made (wheelmq_store_reconciled_total) are
//     counted by crash kind: some reordering crash of the run must have left
//     a derived position ahead of the CommitLog, or the variant proved
//     nothing. (Under sync flush none does: the store writes derived files
//     only for records fsynced, and a reordering crash keeps the CommitLog's
//     durable state; the async run provides them.)
//
// README's test command runs WHEELMQ_POWERLOSS_LOOPS=3 strict or random
// crashes and WHEELMQ_POWERLOSS_REORDER_LOOPS=3 reordering ones per flush
// mode (the defaults), interleaved; `task torture:powerloss LOOPS=50` runs
// LOOPS of each. Every crash's choices come from a seed the test logs
// (WHEELMQ_POWERLOSS_SEED replays a run's crashes; the load's timing is the
// machine's).

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
	plPopTopic   = "pl_pop"
	plPopGroup   = "pl_pop_consumer"
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
	// Its broker runs on an in-memory file system and it mostly waits
	// (about 8 s of CPU in 20 s): it overlaps with the package's other
	// parallel tests. The Go client's log level it lowers is process-wide:
	// their client logs are quiet while it runs.
	t.Parallel()
	if testing.Short() {
		t.Skip("power-loss torture is not short")
	}
	loops := int(envInt(t, "WHEELMQ_POWERLOSS_LOOPS", 3))
	reorder := int(envInt(t, "WHEELMQ_POWERLOSS_REORDER_LOOPS", 3))
	seed := envInt(t, "WHEELMQ_POWERLOSS_SEED", time.Now().UnixNano())
	t.Logf("seed %d (WHEELMQ_POWERLOSS_SEED=%d replays the crashes), %d strict or random and %d reordering crashes per flush mode",
		seed, seed, loops, reorder)
	// The Go client logs every rolled-back local transaction as an error
	// ("executeLocalTransaction but state unexpected"): half the load here.
	processtest.QuietClient() // once: it would set "error" again later
	rlog.SetLogLevel("fatal")
	t.Cleanup(func() { rlog.SetLogLevel("error") })
	ahead := 0
	for i, mode := range []writer.FlushMode{writer.FlushSync, writer.FlushAsync} {
		t.Run(mode.String(), func(t *testing.T) {
			r := &plRun{t: t, mode: mode, rng: rand.New(rand.NewSource(seed + int64(i))), fs: crashfs.New(),
				outcomes: map[string]bool{}}
			r.pops.mode = mode
			defer func() { ahead += r.stats.corrected[crashReorder] }() // also when the run fails
			r.run(schedule(loops, reorder))
		})
	}
	// A reordering crash that leaves no derived file ahead of the CommitLog
	// tests nothing the strict ones did not: some must have.
	t.Logf("%d of %d reordering crashes left derived positions ahead of the CommitLog", ahead, 2*reorder)
	if ahead == 0 && !t.Failed() {
		t.Fatalf("seed %d: no reordering crash left a derived position ahead of the CommitLog (no correction at start)", seed)
	}
}

// plRun is one flush mode's run.
type plRun struct {
	t     *testing.T
	mode  writer.FlushMode
	rng   *rand.Rand
	fs    *crashfs.FS
	hist  plHistory
	pops  popHistory
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

// crashKind is how a crash treats what was not durable.
type crashKind byte

const (
	crashStrict  crashKind = 's' // forgets it all (Crash)
	crashRandom  crashKind = 'r' // keeps pages of it (CrashRandom)
	crashReorder crashKind = 'o' // a reordering disk: files keep prefixes of their writes independently (CrashReorder)
)

// schedule interleaves the reordering crashes with the others (strict and
// random by turns).
func schedule(loops, reorder int) []crashKind {
	var out []crashKind
	for i := 0; i < loops || i < reorder; i++ {
		if i < loops {
			out = append(out, map[bool]crashKind{true: crashStrict, false: crashRandom}[i%2 == 0])
		}
		if i < reorder {
			out = append(out, crashReorder)
		}
	}
	return out
}

// crash crashes the run's file system as kind says and describes how.
func (r *plRun) crash(kind crashKind) (*crashfs.FS, string) {
	switch kind {
	case crashRandom:
		r.stats.random++
		return r.fs.CrashRandom(rand.New(rand.NewSource(r.rng.Int63()))), "random"
	case crashReorder:
		r.stats.reorder++
		tear := r.rng.Intn(2) == 0
		after := r.fs.CrashReorder(rand.New(rand.NewSource(r.rng.Int63())), crashfs.ReorderOptions{TearOrdered: tear})
		if tear {
			return after, "reorder, commitlog torn too"
		}
		return after, "reorder"
	default:
		r.stats.strict++
		return r.fs.Crash(), "strict"
	}
}

func (r *plRun) run(kinds []crashKind) {
	t := r.t
	n := r.start()
	for _, topic := range []string{plTopic, plTimerTopic, plTxTopic, plPopTopic} {
		processtest.CreateTopic(t, n, topic, plQueues)
	}
	for i, kind := range kinds {
		loop := i + 1
		stop := r.load(n, loop)
		time.Sleep(time.Duration(400+r.rng.Intn(800)) * time.Millisecond)
		crashAt := time.Now()
		after, how := r.crash(kind)
		if err := r.pops.crashed(loop, crashAt, after); err != nil {
			t.Fatalf("crash %d: %v", loop, err)
		}
		stop()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		_ = n.Stop(ctx) // on the old file system: nothing it writes now is read again
		cancel()
		acked, must := r.hist.crashed(loop, crashAt, r.mode, after, plDataDir, plSegSize)
		r.stats.loops++
		r.stats.acked += acked
		r.stats.must += must
		r.fs = after
		n = r.start()
		r.checkPlain(n)
		r.checkOffsets(n)
		r.checkPop(n, loop+1)
		corr := r.corrections(n, kind)
		t.Logf("crash %d (%s) at %d: %d sends acknowledged before it, %d had to survive; corrections at start: %v",
			loop, how, crashAt.UnixMilli(), acked, must, corr)
	}
	r.finish(n)
	r.checkPop(n, len(kinds)+1)
	t.Logf("%s: %v", r.mode, r.stats)
}

// corrections returns the corrections n's start made to positions derived
// from the CommitLog (wheelmq_store_reconciled_total, by what) and counts
// them in the run's statistics.
func (r *plRun) corrections(n *process.Node, kind crashKind) map[string]float64 {
	byWhat := metricByLabel(r.t, n, "wheelmq_store_reconciled_total", "what")
	var sum float64
	for _, v := range byWhat {
		sum += v
	}
	if r.stats.corrections == nil {
		r.stats.corrections = map[crashKind]int{}
		r.stats.corrected = map[crashKind]int{}
	}
	r.stats.corrections[kind] += int(sum)
	if sum > 0 {
		r.stats.corrected[kind]++
	}
	return byWhat
}

// metricByLabel sums the counter name of n's registry by the value of label.
func metricByLabel(t testing.TB, n *process.Node, name, label string) map[string]float64 {
	t.Helper()
	families, err := n.Registry().Gather()
	if err != nil {
		t.Fatalf("gather metrics: %v", err)
	}
	out := map[string]float64{}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label {
					out[l.GetValue()] += m.GetCounter().GetValue()
				}
			}
		}
	}
	return out
}

package pipeline

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/dispatch"
	"github.com/wheelmq/wheelmq/actors/pop"
	"github.com/wheelmq/wheelmq/actors/timer"
	"github.com/wheelmq/wheelmq/storage"
	"github.com/wheelmq/wheelmq/storage/meta"
	"github.com/wheelmq/wheelmq/storage/vfs"
)

// openAt opens a pipeline on dir with its metrics on a registry of its own.
func openAt(t *testing.T, dir string) (*Pipeline, *prometheus.Registry) {
	t.Helper()
	cfg := DefaultConfig()
	cfg.DataDir, cfg.Listen = dir, "127.0.0.1:0"
	reg := prometheus.NewRegistry()
	cfg.Registerer = reg
	p, err := Open(cfg)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	return p, reg
}

// TestReconcileClampsPositionsPastTheLog: files derived from a CommitLog
// that is gone (an empty log: a restored or hand-cut one) claim a consumer
// offset, the POP journal's replay start, the dispatch checkpoint, the
// timer replay scan start and the transaction state past its end. The broker starts, each is clamped
// to the end on disk, counted per kind in wheelmq_store_reconciled_total
// and pending until acknowledged; a second start finds nothing to correct.
func TestReconcileClampsPositionsPastTheLog(t *testing.T) {
	dir := t.TempDir()
	fs := vfs.Default(nil)
	if err := os.MkdirAll(filepath.Join(dir, "config"), 0o755); err != nil {
		t.Fatal(err)
	}
	offsetsPath := filepath.Join(dir, "config", "consumerOffset.json")
	if err := meta.SaveOffsets(fs, offsetsPath, meta.OffsetTable{
		meta.OffsetKey("orders", "billing"):                {0: 7, 1: 0},
		meta.OffsetKey(pop.JournalTopic, pop.JournalGroup): {0: 9},
	}); err != nil {
		t.Fatal(err)
	}
	txPath := filepath.Join(dir, "config", "transactions.json")
	if err := meta.SaveTransactionState(fs, txPath, meta.TransactionState{Version: meta.TransactionStateVersion,
		HalfNext: 5, ScanFrom: 5000, Pending: []meta.PendingTransaction{{QueueOffset: 3, CommitLogOffset: 4000}},
		EndedAhead: []int64{6}}); err != nil {
		t.Fatal(err)
	}
	cpPath := filepath.Join(dir, "config", "checkpoint")
	for _, k := range []string{dispatch.CheckpointKey, timer.ReplayCheckpointKey} {
		if err := meta.UpdateCheckpoint(fs, cpPath, k, 5000); err != nil {
			t.Fatal(err)
		}
	}

	p, reg := openAt(t, dir)
	fixes := p.Store().Corrections
	want := map[string]int64{storage.FixConsumerOffset: 1, storage.FixPOPJournal: 1,
		storage.FixDispatchCheckpoint: 1, storage.FixTimerAck: 1, storage.FixTransaction: 2}
	for _, what := range storage.CorrectionKinds {
		if got := fixes.Count(what); got != want[what] {
			t.Errorf("corrections of %s: %d, want %d", what, got, want[what])
		}
		if c := reconciled(t, reg, what); c != float64(want[what]) {
			t.Errorf("wheelmq_store_reconciled_total{what=%q} = %v, want %d", what, c, want[what])
		}
	}
	pending := fixes.Pending()
	if len(pending) != 5 || pending[0].What != storage.FixDispatchCheckpoint || pending[0].Last.From != 5000 || pending[0].Last.To != 0 {
		t.Fatalf("pending corrections %+v", pending)
	}
	if err := p.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}

	table, err := meta.LoadOffsets(fs, offsetsPath)
	if err != nil {
		t.Fatal(err)
	}
	if got := table[meta.OffsetKey("orders", "billing")][0]; got != 0 {
		t.Errorf("consumer offset %d on disk, want 0 (the queue's end)", got)
	}
	if got := table[meta.OffsetKey(pop.JournalTopic, pop.JournalGroup)][0]; got != 0 {
		t.Errorf("the POP journal's replay start %d on disk, want 0", got)
	}
	cp, err := meta.LoadCheckpoint(fs, cpPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{dispatch.CheckpointKey, timer.ReplayCheckpointKey} {
		if v := cp.Values[k]; v != 0 {
			t.Errorf("checkpoint %s = %d on disk, want 0 (the log's end)", k, v)
		}
	}

	ts, found, err := meta.LoadTransactionState(fs, txPath)
	if err != nil || !found || ts.HalfNext != 0 || ts.ScanFrom != 0 || len(ts.Pending) != 0 || len(ts.EndedAhead) != 0 {
		t.Errorf("transaction state on disk %+v (%v %v), want everything at the empty log's start", ts, found, err)
	}

	p2, _ := openAt(t, dir)
	defer func() { _ = p2.Shutdown(context.Background()) }()
	if got := p2.Store().Corrections.Pending(); len(got) != 0 {
		t.Fatalf("a second start corrected again: %+v", got)
	}
}

// reconciled reads wheelmq_store_reconciled_total{what} from reg.
func reconciled(t *testing.T, reg *prometheus.Registry, what string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "wheelmq_store_reconciled_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "what" && l.GetValue() == what {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	t.Fatalf("wheelmq_store_reconciled_total{what=%q} not exported", what)
	return 0
}

// TestCorrectionsAcknowledge: an acknowledgement clears what is pending and
// keeps the counts.
func TestCorrectionsAcknowledge(t *testing.T) {
	c := storage.NewCorrections()
	log := zerolog.Nop()
	c.Record(log, storage.Correction{What: storage.FixIndex, From: 10, To: 5})
	c.Record(log, storage.Correction{What: storage.FixConsumerOffset, Subject: "a@b/0", From: 3, To: 1})
	c.Record(log, storage.Correction{What: storage.FixConsumerOffset, Subject: "a@b/1", From: 4, To: 2})
	p := c.Pending()
	if len(p) != 2 || p[0].What != storage.FixIndex || p[1].Count != 2 || p[1].Last.Subject != "a@b/1" {
		t.Fatalf("pending %+v", p)
	}
	if n := c.Acknowledge(); n != 3 {
		t.Fatalf("acknowledged %d, want 3", n)
	}
	if p := c.Pending(); len(p) != 0 || c.Count(storage.FixConsumerOffset) != 2 {
		t.Fatalf("after the acknowledgement: pending %+v, count %d", p, c.Count(storage.FixConsumerOffset))
	}
}

package pipeline

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/actors/groups"
	"github.com/wheelmq/wheelmq/actors/offsets"
	"github.com/wheelmq/wheelmq/actors/topics"
	"github.com/wheelmq/wheelmq/storage"
	"github.com/wheelmq/wheelmq/storage/meta"
	"github.com/wheelmq/wheelmq/storage/metarec"
)

// TestMetadataLogCarriesStateToACopy opens a pipeline with the metadata
// log, changes a topic, a group and an offset, and opens a second pipeline
// on a byte copy of its CommitLog alone: it ends up with them.
func TestMetadataLogCarriesStateToACopy(t *testing.T) {
	open := func(dir string) *Pipeline {
		cfg := DefaultConfig()
		cfg.DataDir, cfg.MetadataLog, cfg.BrokerName, cfg.Cluster = dir, true, "b1", "c1"
		p, err := Open(cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = p.Shutdown(context.Background()) })
		return p
	}
	wait := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	query := func(p *Pipeline) int64 {
		ch := make(chan int64, 1)
		p.Stage(offsets.StageName).Send(&offsets.Query{Group: "billing", Topic: "orders", QueueID: 2,
			Reply: func(off int64, ok bool) {
				if !ok {
					off = -1
				}
				ch <- off
			}})
		select {
		case v := <-ch:
			return v
		case <-time.After(5 * time.Second):
			t.Fatal("offset query not answered")
			return 0
		}
	}
	src := t.TempDir()
	a := open(src)
	done := make(chan error, 2)
	a.Stage(topics.StageName).Send(&topics.Put{Config: meta.TopicConfig{TopicName: "orders", ReadQueueNums: 8,
		WriteQueueNums: 8, Perm: 6}, Done: func(err error) { done <- err }})
	c := meta.NewSubscriptionGroupConfig("billing")
	c.RetryMaxTimes = 5
	a.Stage(groups.StageName).Send(&groups.Put{Config: c, Done: func(err error) { done <- err }})
	for range 2 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	a.Stage(offsets.StageName).Send(&offsets.Commit{Group: "billing", Topic: "orders", QueueID: 2, Offset: 77})
	// The start snapshot (or the changes' own records) and the offsets
	// journal: records of the three kinds.
	wait("the journal", func() bool {
		q := a.Store().Queues.Lookup(meta.TopicWheelMQMeta, 0)
		if q == nil {
			return false
		}
		units, err := q.Read(0, 64)
		if err != nil {
			return false
		}
		kinds := map[metarec.Kind]bool{}
		for _, rec := range storage.ReadUnits(a.Store().CommitLog, units) {
			if r, err := metarec.FromMessage(rec); err == nil {
				kinds[r.Kind] = true
			}
		}
		return kinds[metarec.KindTopicPut] && kinds[metarec.KindGroupPut] && kinds[metarec.KindOffsets]
	})
	time.Sleep(100 * time.Millisecond)
	if err := a.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}

	dst := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dst, "commitlog"), 0o755); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(filepath.Join(src, "commitlog"))
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(src, "commitlog", e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, "commitlog", e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b := open(dst)
	wait("the copy's topic, group and offset", func() bool {
		tc, ok := b.Topics().Get("orders")
		g, gok := b.Groups().Get("billing")
		return ok && tc.ReadQueueNums == 8 && gok && g.RetryMaxTimes == 5 && query(b) == 77
	})
	if _, ok := b.Topics().Get(meta.TopicWheelMQMeta); ok {
		t.Fatal("the system topic is in the topic table")
	}
}

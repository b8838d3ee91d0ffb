package metalog

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/actors/groups"
	"github.com/wheelmq/wheelmq/actors/offsets"
	"github.com/wheelmq/wheelmq/actors/role"
	"github.com/wheelmq/wheelmq/actors/topics"
	"github.com/wheelmq/wheelmq/actors/writer"
	"github.com/wheelmq/wheelmq/storage/message"
	"github.com/wheelmq/wheelmq/storage/meta"
)

// TestFullSnapshotOutlivesRetention: the changes' own records are in
// segments that retention deleted; a node started on the segments that are
// left still gets every topic, group and offset, from the full snapshot.
func TestFullSnapshotOutlivesRetention(t *testing.T) {
	const seg = 64 << 10
	a := newRigSized(t, t.TempDir(), role.Standalone, seg)
	ask(t, a.tp, func(done func(error)) any {
		return &topics.Put{Config: meta.TopicConfig{TopicName: "early", ReadQueueNums: 2, WriteQueueNums: 2, Perm: 6}, Done: done}
	})
	ask(t, a.gp, func(done func(error)) any {
		return &groups.Put{Config: meta.NewSubscriptionGroupConfig("early-group"), Done: done}
	})
	a.off.Send(&offsets.Commit{Group: "early-group", Topic: "early", QueueID: 1, Offset: 99})
	settle(t, a, 3)
	// Fill three segments with data so that those records end up in
	// segments retention may delete.
	filler := bytes.Repeat([]byte("x"), 8<<10)
	for i := range 3 * seg / len(filler) {
		rec, err := (&message.Record{Topic: "filler", QueueOffset: int64(i), BornHost: host, StoreHost: host, Body: filler}).Encode(nil)
		if err != nil {
			t.Fatal(err)
		}
		ch := make(chan error, 1)
		a.w.Send(&writer.Append{Key: writer.QueueKey{Topic: "filler"}, Records: [][]byte{rec}, Reply: func(r writer.Result) { ch <- r.Err }})
		select {
		case err := <-ch:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(wait):
			t.Fatal("append not answered")
		}
	}
	before := metaRecords(a)
	a.ml.Send(SnapshotNow{})
	settle(t, a, before+3)
	wantTopics, wantGroups, wantOffsets := a.tv.Load().Topics, a.gv.Load().Groups, a.offsetsOf()
	a.close()

	dir := t.TempDir()
	copyCommitLog(t, a.dir, dir)
	segs, err := os.ReadDir(filepath.Join(dir, "commitlog"))
	if err != nil {
		t.Fatal(err)
	}
	names := []string{}
	for _, e := range segs {
		names = append(names, e.Name())
	}
	slices.Sort(names)
	if len(names) < 3 {
		t.Fatalf("only %d segments", len(names))
	}
	for _, n := range names[:len(names)-1] { // as retention would: the oldest go
		if err := os.Remove(filepath.Join(dir, "commitlog", n)); err != nil {
			t.Fatal(err)
		}
	}
	b := newRigSized(t, dir, role.Standalone, seg)
	if b.st.CommitLog.MinOffset() == 0 {
		t.Fatal("the first segment is still there")
	}
	eventually(t, "the snapshot to rebuild the state", func() bool {
		return equalJSON(b.tv.Load().Topics, wantTopics) && equalJSON(b.gv.Load().Groups, wantGroups) &&
			equalJSON(b.offsetsOf(), wantOffsets)
	})
}

package process_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/actors/broker"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/litelog"
	"github.com/wheelmq/wheelmq/storage/message"
)

// TestLiteIndexRebuiltFromCommitLog: the lite log is an index of the
// CommitLog (docs/lite.md): lite messages sent over remoting (property
// __LITE_TOPIC) are in it; with its tail cut off (a crash before the
// writer wrote it) a restart indexes the missing messages again from the
// CommitLog, in order and without duplicates; with the log deleted, a
// restart rebuilds it all.
func TestLiteIndexRebuiltFromCommitLog(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	n := processtest.Start(t, processtest.Options{Dir: dir})
	topic := processtest.Unique("lite_rebuild")
	if r := processtest.Invoke(t, n.BrokerAddr(), remoting.NewRequest(remoting.UpdateAndCreateTopic, map[string]string{
		"topic": topic, "readQueueNums": "2", "writeQueueNums": "2", "perm": "6", "attributes": "+message.type=LITE",
	}, nil)); r.Code != remoting.Success {
		t.Fatalf("create LITE topic: %d %s", r.Code, r.Remark)
	}
	want := map[string]int{"a": 5, "b": 3}
	for lite, count := range want {
		for i := range count {
			r := processtest.Invoke(t, n.BrokerAddr(), processtest.SendRequest(topic, -1, []byte(fmt.Sprintf("%s-%d", lite, i)),
				map[string]string{message.PropLiteTopic: lite, message.PropUniqKey: processtest.Unique("uk")}))
			if r.Code != remoting.Success {
				t.Fatalf("send %s-%d: %d %s", lite, i, r.Code, r.Remark)
			}
		}
	}
	liteDir := broker.LiteDir(dir)
	restart := func(change func()) *broker.Broker {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := n.Stop(ctx); err != nil {
			t.Fatalf("stop: %v", err)
		}
		change()
		n = processtest.Start(t, processtest.Options{Dir: dir})
		return n.Broker().Core()
	}
	check := func(core *broker.Broker, when string) {
		t.Helper()
		for lite, count := range want {
			if held := core.LiteHeld(topic, lite); held != count {
				t.Fatalf("%s: lite topic %s holds %d, want %d", when, lite, held, count)
			}
		}
	}
	check(n.Broker().Core(), "before")

	// Cut the log after its third Message record.
	core := restart(func() {
		b, err := os.ReadFile(litelog.Path(liteDir))
		if err != nil {
			t.Fatal(err)
		}
		cut, msgs := len(litelog.Magic), 0
		_ = litelog.Read(liteDir, func(r *litelog.Record) {
			if msgs < 3 {
				cut += len(litelog.Append(nil, r))
			}
			if r.Kind == litelog.KindMessage {
				msgs++
			}
		})
		if msgs != 8 {
			t.Fatalf("the log holds %d Message records, want 8", msgs)
		}
		if err := os.WriteFile(litelog.Path(liteDir), b[:cut], 0o644); err != nil {
			t.Fatal(err)
		}
	})
	check(core, "after the cut")

	core = restart(func() {
		if err := os.RemoveAll(filepath.Join(liteDir)); err != nil {
			t.Fatal(err)
		}
	})
	check(core, "after deleting the log")
	msgs := 0
	_ = litelog.Read(liteDir, func(r *litelog.Record) {
		if r.Kind == litelog.KindMessage {
			msgs++
		}
	})
	if msgs != 8 {
		t.Fatalf("the rebuilt log holds %d Message records, want 8", msgs)
	}
}

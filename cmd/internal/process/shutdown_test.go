package process_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/pipeline"
	"github.com/wheelmq/wheelmq/actors/writer"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// logLines returns the JSON log lines of buf whose message contains msg.
func (s *syncBuffer) logLines(t *testing.T, msg string) []map[string]any {
	t.Helper()
	s.mu.Lock()
	text := s.b.String()
	s.mu.Unlock()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var line map[string]any
		if json.Unmarshal(sc.Bytes(), &line) != nil {
			continue
		}
		if m, _ := line["message"].(string); strings.Contains(m, msg) {
			out = append(out, line)
		}
	}
	return out
}

// TestStuckStageKeepsItsStoreOpen stops a broker whose commitlog writer is
// stuck in a message (its fault hook blocks after an append): the stop
// ends within its deadlines, the log names the writer as the stage that
// did not stop in time, and the store stays open under it, so that when
// the writer goes on it finishes against open files.
func TestStuckStageKeepsItsStoreOpen(t *testing.T) {
	logs := &syncBuffer{}
	var armed atomic.Bool
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	n := processtest.Start(t, processtest.Options{Mutate: func(c *pipeline.Config) {
		c.Logger = zerolog.New(io.MultiWriter(logs, zerolog.NewTestWriter(t))).Level(zerolog.InfoLevel).
			With().Timestamp().Logger()
		c.DrainTimeout, c.StopStageTimeout = 300*time.Millisecond, 300*time.Millisecond
		c.WriterStall = func() {
			if armed.Load() {
				once.Do(func() { close(entered) })
				<-release
			}
		}
	}})
	topic := processtest.Unique("stuck")
	processtest.CreateTopic(t, n, topic, 1)
	b := dialRaw(t, n, topic)
	b.mustSend("before")

	armed.Store(true)
	if err := b.c.Go(processtest.SendRequest(topic, 0, []byte("stuck"), nil), 30*time.Second,
		func(*remoting.Command, error) {}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the writer did not reach its stall hook")
	}
	defer close(release)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	began := time.Now()
	err := n.Stop(ctx)
	took := time.Since(began)
	if !errors.Is(err, pipeline.ErrStagesStuck) || !strings.Contains(err.Error(), writer.StageName) {
		t.Fatalf("Stop with a stuck writer: %v, want ErrStagesStuck naming %s", err, writer.StageName)
	}
	if took > 10*time.Second {
		t.Fatalf("Stop took %v with a stuck stage", took)
	}
	stuck := logs.logLines(t, "did not stop in time")
	if len(stuck) != 1 || stuck[0]["stage"] != writer.StageName {
		t.Fatalf("log lines of stages that did not stop in time: %v, want one naming %s", stuck, writer.StageName)
	}
	if lines := logs.logLines(t, "store left open"); len(lines) != 1 {
		t.Fatalf("log lines about the store left open: %v", lines)
	}

	// The store is open: the writer's files still read.
	st := n.Broker().Store()
	if _, _, err := st.CommitLog.Read(0); err != nil {
		t.Fatalf("the CommitLog was closed under the stuck writer: %v", err)
	}
	end := st.CommitLog.MaxOffset()
	w := n.Broker().Pipeline().Stage(writer.StageName)
	if w.Stopped() {
		t.Fatal("the stuck writer reports stopped")
	}
	release <- struct{}{} // the writer goes on
	deadline := time.Now().Add(10 * time.Second)
	for !w.Stopped() {
		if time.Now().After(deadline) {
			t.Fatal("the writer did not stop once released")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if got := st.CommitLog.MaxOffset(); got != end {
		t.Fatalf("CommitLog end moved from %d to %d after the writer was released", end, got)
	}
	if err := st.CommitLog.Failed(); err != nil {
		t.Fatalf("the writer finished against a failed CommitLog: %v", err)
	}
	if err := st.Close(); err != nil { // what the process exit would do
		t.Fatalf("closing the store the stop left open: %v", err)
	}
}

package process_test

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/pipeline"
	"github.com/wheelmq/wheelmq/cmd/internal/process"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
)

// syncBuffer is a log sink shared by the broker's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) count(sub string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Count(s.b.String(), sub)
}

// waitDisk waits until the broker's sampled disk state is full (or not).
func waitDisk(t *testing.T, n *process.Node, full bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for n.Broker().Pipeline().Disk().Full() != full {
		if time.Now().After(deadline) {
			t.Fatalf("disk state full=%v not reached in 10 s", full)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestDiskFullRefusesSends injects the disk's used ratio: past the full
// ratio sends are refused with SERVICE_NOT_AVAILABLE and RocketMQ's remark
// while pulls go on, the state change is logged once, and below the mark
// sends are accepted again.
func TestDiskFullRefusesSends(t *testing.T) {
	var ratio atomic.Uint64
	setRatio := func(r float64) { ratio.Store(math.Float64bits(r)) }
	setRatio(0.5)
	logs := &syncBuffer{}
	n := processtest.Start(t, processtest.Options{Metrics: true, Mutate: func(c *pipeline.Config) {
		c.DiskUsage = func() (float64, error) { return math.Float64frombits(ratio.Load()), nil }
		c.DiskSampleInterval = 10 * time.Millisecond
		c.Logger = zerolog.New(logs).Level(zerolog.WarnLevel)
	}})
	topic := processtest.Unique("full")
	processtest.CreateTopic(t, n, topic, 2)
	p := processtest.Producer(t, n.NamesrvAddr())
	ctx := context.Background()
	for i := 0; i < 10; i++ {
		if _, err := p.SendSync(ctx, primitive.NewMessage(topic, []byte(fmt.Sprintf("before-%d", i)))); err != nil {
			t.Fatalf("send before: %v", err)
		}
	}

	setRatio(0.93)
	waitDisk(t, n, true)
	if v := metricValue(t, n, "wheelmq_store_disk_used_ratio"); v != 0.93 {
		t.Fatalf("wheelmq_store_disk_used_ratio %v", v)
	}
	_, err := p.SendSync(ctx, primitive.NewMessage(topic, []byte("refused")))
	if err == nil || !strings.Contains(err.Error(), "CODE: 14") ||
		!strings.Contains(err.Error(), "the broker's disk is full [CL:  0.93 CQ:  0.93 INDEX:  0.93]") {
		t.Fatalf("send on a full disk: %v", err)
	}
	// Pulls go on: what was stored before is consumed.
	_, rec := processtest.PushConsumer(t, n.NamesrvAddr(), processtest.Unique("cg"), topic, "*")
	if !rec.WaitFor(10, 30*time.Second) {
		t.Fatalf("consumed %d of 10 messages while the disk is full", rec.Len())
	}
	time.Sleep(100 * time.Millisecond) // many more samples above the mark

	setRatio(0.89)
	waitDisk(t, n, false)
	if _, err := p.SendSync(ctx, primitive.NewMessage(topic, []byte("after"))); err != nil {
		t.Fatalf("send below the mark: %v", err)
	}
	if !rec.WaitFor(11, 30*time.Second) {
		t.Fatal("the message sent after the disk freed up was not consumed")
	}
	if c := logs.count("disk full: refusing sends"); c != 1 {
		t.Fatalf("%d 'disk full' log lines, want 1", c)
	}
	if c := logs.count("accepting sends again"); c != 1 {
		t.Fatalf("%d 'accepting sends again' log lines, want 1", c)
	}
}

// String is everything logged so far.
func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"math"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/message"
)

func TestPercentiles(t *testing.T) {
	tests := []struct {
		name string
		us   []int64
		want latency
	}{
		{"one", []int64{1500}, latency{1.5, 1.5, 1.5, 1.5}},
		{"unsorted", []int64{3000, 1000, 2000}, latency{2, 3, 3, 3}},
		{"hundred", seq(1, 100, 1000), latency{50, 90, 99, 100}},
		{"negative", []int64{-2000, 1000, 5000, 7000}, latency{1, 7, 7, 7}},
	}
	for _, tt := range tests {
		if got := percentiles(tt.us); got != tt.want {
			t.Errorf("%s: got %+v, want %+v", tt.name, got, tt.want)
		}
	}
	if got := percentiles(nil); !math.IsNaN(got.P99) {
		t.Errorf("empty: got %+v, want NaN", got)
	}
}

// seq returns from*unit, (from+1)*unit, ..., to*unit.
func seq(from, to, unit int64) []int64 {
	var s []int64
	for i := from; i <= to; i++ {
		s = append(s, i*unit)
	}
	return s
}

func TestMetricValue(t *testing.T) {
	text := []byte("# HELP wheelmq_timer_pending Timers.\n# TYPE wheelmq_timer_pending gauge\n" +
		"wheelmq_timer_pending_other 7\nwheelmq_timer_pending 1.2e+07\n" +
		"wheelmq_timer_skipped_total{reason=\"unreadable\"} 5\nwheelmq_timer_skipped_total{reason=\"a}b\"} 2\n" +
		"wheelmq_bad{a=\"b\"} x\n")
	tests := []struct {
		name string
		want float64
		ok   bool
	}{
		{"wheelmq_timer_pending", 12e6, true},
		{"wheelmq_timer_pending_other", 7, true},
		{"wheelmq_timer_skipped_total", 7, true},
		{"wheelmq_bad", 0, false},
		{"wheelmq_missing", 0, false},
	}
	for _, tt := range tests {
		got, ok := metricValue(text, tt.name)
		if got != tt.want || ok != tt.ok {
			t.Errorf("%s: got %v %v, want %v %v", tt.name, got, ok, tt.want, tt.ok)
		}
	}
}

// record returns a stored record as a pull body carries it.
func record(t testing.TB, seqNo uint64, dueMs, storeMs int64, props map[string]string) []byte {
	t.Helper()
	if props == nil {
		props = map[string]string{message.PropTimerDeliverMS: strconv.FormatInt(dueMs, 10)}
	}
	r := &message.Record{
		BornHost: netip.MustParseAddrPort("127.0.0.1:1"), StoreHost: netip.MustParseAddrPort("127.0.0.1:10911"),
		StoreTimestamp: storeMs, Body: benchBody(make([]byte, 32), seqNo), Topic: "bench",
		Properties: message.EncodeProperties(props),
	}
	b, err := r.Encode(nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseDelivery(t *testing.T) {
	rec := record(t, 42, 1_700_000_000_123, 1_700_000_000_125, nil)
	d, n, err := parseDelivery(append(rec, 0xAA))
	if err != nil || n != len(rec) || d != (delivery{seq: 42, dueMs: 1_700_000_000_123, storeMs: 1_700_000_000_125}) {
		t.Fatalf("got %+v %d %v", d, n, err)
	}
	noProp := record(t, 7, 0, 5, map[string]string{"KEYS": "k"})
	if d, _, err := parseDelivery(noProp); err != nil || d.dueMs != -1 {
		t.Fatalf("without TIMER_DELIVER_MS: got %+v %v, want dueMs -1", d, err)
	}
	for _, bad := range [][]byte{nil, rec[:20], rec[:len(rec)-1]} {
		if _, _, err := parseDelivery(bad); err == nil {
			t.Errorf("%d bytes: no error", len(bad))
		}
	}
}

func FuzzParseDelivery(f *testing.F) {
	f.Add(record(f, 1, 1000, 1001, nil))
	f.Add(record(f, 2, 5, 4, map[string]string{message.PropTimerDeliverMS: "x"}))
	f.Add([]byte{0, 0, 0, 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		d, n, err := parseDelivery(b)
		if err == nil && (n <= 0 || n > len(b)) {
			t.Fatalf("size %d of %d bytes (%+v)", n, len(b), d)
		}
		r := newRecorder(make([]int64, 4))
		r.onBody(time.Now(), b) // must not panic
	})
}

func TestRecorder(t *testing.T) {
	now := time.UnixMilli(10_000)
	r := newRecorder([]int64{10_000, 10_000, 10_050, 9_000})
	var body []byte
	body = append(body, record(t, 0, 10_000, 10_000, nil)...) // on time
	body = append(body, record(t, 1, 10_000, 10_001, nil)...) // on time
	body = append(body, record(t, 2, 10_050, 10_049, nil)...) // early at both ends
	body = append(body, record(t, 0, 10_000, 10_000, nil)...) // duplicate
	body = append(body, record(t, 9, 10_000, 10_000, nil)...) // stray
	body = append(body, record(t, 3, 8_000, 9_500, nil)...)   // wrong TIMER_DELIVER_MS, late
	r.onBody(now, body)
	r.onBody(now, []byte{1, 2, 3}) // undecodable
	want := recorder{early: 1, storeEarly: 1, dups: 1, strays: 1, mismatched: 1, badRecords: 1}
	if r.early != want.early || r.storeEarly != want.storeEarly || r.dups != want.dups || r.strays != want.strays ||
		r.mismatched != want.mismatched || r.badRecords != want.badRecords || r.delivered() != 4 {
		t.Fatalf("got early %d storeEarly %d dups %d strays %d mismatched %d bad %d delivered %d",
			r.early, r.storeEarly, r.dups, r.strays, r.mismatched, r.badRecords, r.delivered())
	}
	if got := percentiles(r.lateUs); got.Max != 1000 || got.P50 != 0 {
		t.Fatalf("lateness %+v, want p50 0 and max 1000 ms", got)
	}
}

// TestLeanConnPipelines checks that many requests pipelined through small
// windows all reach a plain server as intact frames and are all answered.
// It catches the writer handing a buffer to the encoder while writing it.
func TestLeanConnPipelines(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	serverErr := make(chan error, 1)
	go func() {
		conn, err := l.Accept()
		if err != nil {
			serverErr <- err
			return
		}
		defer conn.Close()
		br, bw := bufio.NewReader(conn), bufio.NewWriter(conn)
		for {
			cmd, err := remoting.ReadFrame(br, 0)
			if err != nil {
				serverErr <- err
				return
			}
			if cmd.Code != remoting.SendMessageV2 || len(cmd.Body) != 256 || cmd.Field("b") != "topic" {
				serverErr <- errBenchFailed
				return
			}
			resp := remoting.NewResponse(cmd, remoting.Success, "")
			if seqNo := cmd.Body[7]; seqNo%7 == 0 {
				resp.Code = remoting.SystemBusy
			}
			b, _ := remoting.EncodeFrame(resp)
			_, _ = bw.Write(b)
			if br.Buffered() == 0 {
				_ = bw.Flush()
			}
		}
	}()
	c, err := dialLean(context.Background(), l.Addr().String(), 16, remoting.ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s := newTimerSender("g", "topic", "b", remoting.SerializeRocketMQ, benchUniq())
	body := make([]byte, 256)
	const n = 20000
	var ok, busy atomic.Int64
	done := make(chan struct{})
	for i := 0; i < n; i++ {
		err := c.Go(s.build(i%8, 1, benchBody(body, uint64(i))), func(r *remoting.Command, err error) {
			switch {
			case err != nil:
				t.Errorf("request failed: %v", err)
			case r.Code == remoting.SystemBusy:
				busy.Add(1)
			default:
				ok.Add(1)
			}
			if ok.Load()+busy.Load() == n {
				close(done)
			}
		})
		if err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
	}
	select {
	case <-done:
	case err := <-serverErr:
		t.Fatalf("server: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatalf("answered %d of %d", ok.Load()+busy.Load(), n)
	}
	if busy.Load() == 0 || ok.Load() == 0 {
		t.Fatalf("ok %d busy %d: both kinds of answer expected", ok.Load(), busy.Load())
	}
}

// TestBenchTimerSmoke runs every scenario, small, against an in-process
// wheelmq and checks the JSON report.
func TestBenchTimerSmoke(t *testing.T) {
	// Mostly waiting for due times, so it runs in parallel; its leads leave a
	// loaded machine room to finish the sends before the due second.
	t.Parallel()
	out, errOut, code := runCLI(t, "bench", "timer", "--scenario", "spread,burst,pending", "-n", "3000",
		"--window-start", "4s", "--window-len", "500ms", "--lead", "4s", "--drain", "10s",
		"--conns", "2", "--window", "64", "--json")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	var rep timerReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("--json output does not parse: %v\n%s", err, out)
	}
	if rep.Kind != "timer" || len(rep.Scenarios) != 3 {
		t.Fatalf("report %+v", rep)
	}
	for _, s := range rep.Scenarios {
		if !s.OK || s.Notes != "ok" || s.Early != 0 || s.Acknowledged != 3000 || s.EnqueuePerSec <= 0 {
			t.Errorf("scenario %s not clean: %+v", s.Name, s)
		}
		switch s.Name {
		case "spread", "burst":
			if s.Delivered != 3000 || s.Lateness == nil || s.Lateness.P50 < 0 || s.Lateness.P99 < s.Lateness.P50 ||
				s.Lateness.Max < s.Lateness.P99 || s.WrittenBack == nil {
				t.Errorf("%s: deliveries %+v", s.Name, s)
			}
		case "pending":
			if p := s.Pending; p == nil || p.PendingSeen != 3000 || p.PendingAfter != 3000 || p.Lost != 0 || p.TimerDiskBytes == 0 {
				t.Errorf("pending: %+v", s.Pending)
			}
		}
	}
}

func TestBenchTimerFlags(t *testing.T) {
	tests := [][]string{
		{"--scenario", "nope"},
		{"--serialize", "xml"},
		{"--size", "4"},
		{"--pull-batch", "2000"},
		{"--flush", "never"},
	}
	for _, args := range tests {
		_, errOut, code := runCLI(t, append([]string{"bench", "timer"}, args...)...)
		if code != 2 || strings.Count(errOut, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q; want 2 and one line", args, code, errOut)
		}
	}
}

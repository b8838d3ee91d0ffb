package history

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// h builds synthetic histories.
type h struct{ ops []Op }

func (b *h) send(key string, result string, timer bool, due int64) *h {
	b.ops = append(b.ops, Op{Type: Invoke, F: FSend, Key: key, Topic: "t", Timer: timer, DueMs: due, TimeMs: 1})
	if result != "" {
		b.ops = append(b.ops, Op{Type: result, F: FSend, Key: key, Topic: "t", TimeMs: 2})
	}
	return b
}

func (b *h) cancel(key, result string, at int64) *h {
	b.ops = append(b.ops, Op{Type: Invoke, F: FCancel, Key: key, TimeMs: at - 1},
		Op{Type: result, F: FCancel, Key: key, TimeMs: at})
	return b
}

func (b *h) recv(key string, q int, off, at int64) *h {
	b.ops = append(b.ops, Op{Type: Recv, F: FRecv, Key: key, Topic: "t", Broker: "broker-a", Queue: q, QueueOffset: off, TimeMs: at})
	return b
}

// clean is a history every rule accepts: ok, info and fail sends, a timer
// on time, a confirmed cancel whose timer never came, an indeterminate
// send never received, a redelivered plain message.
func clean() *h {
	b := &h{}
	b.send("a", OK, false, 0).recv("a", 0, 0, 10)
	b.send("b", Info, false, 0).recv("b", 0, 1, 11)
	b.send("c", Info, false, 0)
	b.send("d", Fail, false, 0)
	b.send("t1", OK, true, 5000).recv("t1", 1, 0, 5200)
	b.send("t2", OK, true, 9000).cancel("t2", OK, 100)
	b.send("a2", OK, false, 0).recv("a2", 0, 2, 12).recv("a2", 0, 2, 13)
	return b
}

func TestCheck(t *testing.T) {
	tests := []struct {
		name string
		make func() *h
		want string // substring of a violation; "" = clean
		o    Options
	}{
		{"clean", clean, "", Options{}},
		{"lost", func() *h { return clean().send("x", OK, false, 0) }, "lost", Options{}},
		{"unexpected", func() *h { return clean().recv("ghost", 0, 3, 20) }, "unexpected", Options{}},
		{"early timer", func() *h { return clean().send("e", OK, true, 8000).recv("e", 1, 1, 7999) }, "timers early", Options{}},
		{"late timer", func() *h { return clean().send("l", OK, true, 1000).recv("l", 1, 1, 9000) }, "late past the bound", Options{LateBoundMs: 5000}},
		{"cancelled delivered", func() *h {
			return clean().send("k", OK, true, 9000).cancel("k", OK, 1000).recv("k", 1, 1, 9100)
		}, "cancelled timers delivered", Options{}},
		{"offset conflict", func() *h { return clean().send("y", OK, false, 0).recv("y", 0, 1, 30) }, "two keys", Options{}},
		{"gap", func() *h { return clean().send("g", OK, false, 0).recv("g", 0, 5, 30) }, "gaps", Options{}},
		{"timer duplicate", func() *h { return clean().send("d2", OK, true, 100).recv("d2", 1, 1, 200).recv("d2", 1, 1, 300) },
			"timer duplicates", Options{TimerDuplicatesFatal: true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := Check(tc.make().ops, tc.o)
			v := r.Violations(tc.o)
			if tc.want == "" {
				if len(v) != 0 {
					t.Fatalf("clean history: violations %v (%s)", v, r)
				}
				return
			}
			if len(v) != 1 || !strings.Contains(v[0], tc.want) {
				t.Fatalf("violations %v, want exactly one about %q (%s)", v, tc.want, r)
			}
		})
	}
}

func TestCheckCounts(t *testing.T) {
	b := clean()
	// A cancel confirmed too close to the due time may lose the race: the
	// delivery is not a violation.
	b.send("race", OK, true, 5000).cancel("race", OK, 4500).recv("race", 1, 1, 5001)
	b.send("fd", Fail, false, 0).recv("fd", 0, 3, 40)
	r := Check(b.ops, Options{})
	if v := r.Violations(Options{}); len(v) != 0 {
		t.Fatalf("violations %v", v)
	}
	if r.Invoked != 9 || r.OK != 5 || r.Failed != 2 || r.Indeterminate != 2 {
		t.Fatalf("counts: %s", r)
	}
	if r.Duplicates != 1 || r.TimerDuplicates != 0 || len(r.FailedDelivered) != 1 {
		t.Fatalf("duplicates/failed-delivered: %s", r)
	}
	if r.Lateness.N != 2 || r.Lateness.Max != 200 || r.Lateness.P50 != 200 {
		t.Fatalf("lateness %+v", r.Lateness)
	}
}

func TestRecorderRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history.jsonl")
	rec, err := NewRecorder(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range clean().ops {
		rec.Add(op)
	}
	rec.Nemesis("kill -9 broker-a-0")
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ops, err := Read(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if want := rec.Ops(); len(ops) != len(want) || ops[len(ops)-1].Note != "kill -9 broker-a-0" {
		t.Fatalf("read %d ops, wrote %d", len(ops), len(want))
	}
	if v := Check(ops, Options{}).Violations(Options{}); len(v) != 0 {
		t.Fatal(v)
	}
}

// writeLog writes a CommitLog of data as segments of segSize bytes.
func writeLog(t *testing.T, data []byte, segSize int) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "commitlog"), 0o755); err != nil {
		t.Fatal(err)
	}
	for base := 0; base < len(data); base += segSize {
		name := filepath.Join(dir, "commitlog", fmt.Sprintf("%020d", base))
		if err := os.WriteFile(name, data[base:min(len(data), base+segSize)], 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestCompareCommitLogs(t *testing.T) {
	data := make([]byte, 3*RangeSize+123)
	for i := range data {
		data[i] = byte(i * 7)
	}
	a := writeLog(t, data, 1<<21)
	b := writeLog(t, data, 1<<20+17) // other segment sizes: compared as one stream
	d, err := CompareCommitLogs([]string{a, b}, int64(len(data)))
	if err != nil || !d.Same || d.Ranges != 4 {
		t.Fatalf("same logs: %+v %v", d, err)
	}
	changed := append([]byte(nil), data...)
	changed[2*RangeSize+5] ^= 0xff
	c := writeLog(t, changed, 1<<20)
	d, err = CompareCommitLogs([]string{a, b, c}, int64(len(data)))
	if err != nil || d.Same || d.Offset != 2*RangeSize+5 {
		t.Fatalf("changed byte: %+v %v", d, err)
	}
	// Up to the change they agree.
	if d, err = CompareCommitLogs([]string{a, c}, 2*RangeSize+5); err != nil || !d.Same {
		t.Fatalf("prefix: %+v %v", d, err)
	}
	short := writeLog(t, data[:RangeSize], 1<<20)
	if _, err := CompareCommitLogs([]string{a, short}, int64(len(data))); err == nil {
		t.Fatal("a log shorter than the offset compared without error")
	}
}

func TestCompareFiles(t *testing.T) {
	dir := t.TempDir()
	p := func(name, body string) string {
		f := filepath.Join(dir, name)
		if err := os.WriteFile(f, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return f
	}
	x, y, z := p("x", "epochs"), p("y", "epochs"), p("z", "epochz")
	if same, _, err := CompareFiles([]string{x, y}); !same || err != nil {
		t.Fatal("equal files differ")
	}
	if same, detail, err := CompareFiles([]string{x, y, z}); same || err != nil || !strings.Contains(detail, "byte 5") {
		t.Fatalf("different files: %v %q %v", same, detail, err)
	}
}

// FuzzRead: any input either parses or errors, and what parses checks
// without panicking.
func FuzzRead(f *testing.F) {
	f.Add([]byte(`{"type":"invoke","f":"send","key":"a","time_ms":1}` + "\n" + `{"type":"recv","f":"recv","key":"a","queue":0,"queue_offset":0,"time_ms":2}`))
	f.Add([]byte("{\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		ops, err := Read(bytes.NewReader(b))
		if err != nil {
			return
		}
		_ = Check(ops, Options{LateBoundMs: 1}).Violations(Options{TimerDuplicatesFatal: true})
	})
}

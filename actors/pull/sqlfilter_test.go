package pull

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/dispatch"
	"github.com/wheelmq/wheelmq/actors/wirecode"
	"github.com/wheelmq/wheelmq/storage"
	"github.com/wheelmq/wheelmq/storage/consumequeue"
	"github.com/wheelmq/wheelmq/storage/message"
	"github.com/wheelmq/wheelmq/storage/sql92"
)

// putProps stores one message with the given properties.
func (r *rig) putProps(t testing.TB, topic string, queue int32, props map[string]string) []byte {
	t.Helper()
	q, err := r.st.Queues.Queue(topic, queue)
	if err != nil {
		t.Fatal(err)
	}
	rec := &message.Record{QueueID: queue, Topic: topic, QueueOffset: q.MaxOffset(),
		Body: []byte(fmt.Sprintf("body-%d", q.MaxOffset())), Properties: message.EncodeProperties(props)}
	b, err := rec.Encode(nil)
	if err != nil {
		t.Fatal(err)
	}
	offs, err := r.st.CommitLog.Append([][]byte{b})
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Append(consumequeue.Unit{Offset: offs[0], Size: int32(len(b)), TagsCode: message.TagsHashCode(props[message.PropTags])}); err != nil {
		t.Fatal(err)
	}
	return b
}

func sqlRequest(t *testing.T, topic string, offset int64, maxNums int32, expr string) *Request {
	t.Helper()
	req := request(topic, 0, offset, maxNums, "*")
	f, err := CompileFilter(ExpressionSQL92, expr)
	if err != nil {
		t.Fatal(err)
	}
	req.Filter = f
	return req
}

func TestPullSQL92(t *testing.T) {
	r := newRig(t, storage.Options{})
	recs := [][]byte{
		r.putProps(t, "T", 0, map[string]string{"a": "1", "TAGS": "TagA"}),
		r.putProps(t, "T", 0, map[string]string{"a": "5"}),
		r.putProps(t, "T", 0, map[string]string{"a": "10", "TAGS": "TagB"}),
		r.putProps(t, "T", 0, map[string]string{"x": "abc"}),
		r.putProps(t, "T", 0, map[string]string{"a": "7", "TAGS": "TagA", "x": "9"}),
	}
	r.start(t, 0)
	const ok, nf = Found, NoNewMessage
	tests := []struct {
		expr    string
		offset  int64
		maxNums int32
		want    want
	}{
		{"a > 3", 0, 32, want{ok, "FOUND", 5, 0, 5, cat(recs[1], recs[2], recs[4])}},
		{"a > 3", 0, 2, want{ok, "FOUND", 3, 0, 5, cat(recs[1], recs[2])}},
		{"a > 3", 3, 32, want{ok, "FOUND", 5, 0, 5, recs[4]}},
		{"TAGS = 'TagA'", 0, 32, want{ok, "FOUND", 5, 0, 5, cat(recs[0], recs[4])}},
		{"TAGS IN ('TagA', 'TagB') AND a BETWEEN 2 AND 8", 0, 32, want{ok, "FOUND", 5, 0, 5, recs[4]}},
		{"a IS NULL", 0, 32, want{ok, "FOUND", 5, 0, 5, recs[3]}},
		{"x > 5", 0, 32, want{ok, "FOUND", 5, 0, 5, recs[4]}}, // "abc" fails to convert: skipped
		{"NOT (x > 5)", 0, 32, want{nf, "OFFSET_OVERFLOW_ONE", 5, 0, 5, nil}},
		{"a > 100", 0, 32, want{nf, "OFFSET_OVERFLOW_ONE", 5, 0, 5, nil}},
		{"a = 1", 1, 32, want{nf, "OFFSET_OVERFLOW_ONE", 5, 0, 5, nil}},
		{"TRUE", 2, 32, want{ok, "FOUND", 5, 0, 5, cat(recs[2:]...)}},
	}
	for _, tt := range tests {
		req := sqlRequest(t, "T", tt.offset, tt.maxNums, tt.expr)
		check(t, fmt.Sprintf("%q from %d", tt.expr, tt.offset), req, r.pull(t, req), tt.want)
	}
}

func TestPullSQL92MaxBytes(t *testing.T) {
	r := newRig(t, storage.Options{})
	var recs [][]byte
	for i := 0; i < 6; i++ {
		recs = append(recs, r.putProps(t, "T", 0, map[string]string{"i": fmt.Sprint(i)}))
	}
	r.start(t, 2*len(recs[0])+len(recs[0])/2)
	req := sqlRequest(t, "T", 0, 32, "i >= 1")
	check(t, "two fit", req, r.pull(t, req), want{Found, "FOUND", 3, 0, 6, cat(recs[1], recs[2])})
}

func TestPullSQL92ScanLimitRetriesImmediately(t *testing.T) {
	r := newRig(t, storage.Options{})
	// More non-matching messages than one pull may scan, then a match.
	n := maxScanUnits + 3
	for i := 0; i < n; i++ {
		r.putProps(t, "T", 0, map[string]string{"a": "0"})
	}
	last := r.putProps(t, "T", 0, map[string]string{"a": "1"})
	r.start(t, 0)
	max := int64(n + 1)
	req := sqlRequest(t, "T", 0, 32, "a = 1")
	check(t, "scan limit", req, r.pull(t, req),
		want{RetryImmediately, "NO_MATCHED_MESSAGE", maxScanUnits, 0, max, nil})
	req = sqlRequest(t, "T", maxScanUnits, 32, "a = 1")
	check(t, "after the scan limit", req, r.pull(t, req), want{Found, "FOUND", max, 0, max, last})
}

func TestSuspendedSQL92PullWokenByMatch(t *testing.T) {
	r := newRig(t, storage.Options{})
	r.start(t, 0)
	req := sqlRequest(t, "T", 0, 32, "region = 'eu'")
	req.SysFlag = FlagSuspend
	req.SuspendUntil = time.Now().Add(time.Minute)
	ch := r.send(req)
	r.barrier(t)
	notAnswered(t, ch, "after parking")
	r.putProps(t, "T", 0, map[string]string{"region": "us"})
	r.p.Send(&Arrived{Queues: []dispatch.Arrival{{Topic: "T", QueueID: 0, MaxOffset: 1}}})
	r.barrier(t)
	notAnswered(t, ch, "after a message the expression rejects")
	eu := r.putProps(t, "T", 0, map[string]string{"region": "eu"})
	r.p.Send(&Arrived{Queues: []dispatch.Arrival{{Topic: "T", QueueID: 0, MaxOffset: 2}}})
	check(t, "woken", req, await(t, ch), want{Found, "FOUND", 2, 0, 2, eu})
}

func TestCompileFilter(t *testing.T) {
	tests := []struct {
		typ, expr string
		sql       bool
		errIs     error
		parseErr  bool
	}{
		{typ: "", expr: "TagA"},
		{typ: "TAG", expr: "*"},
		{typ: "tag", expr: "TagA || TagB"},
		{typ: "SQL92", expr: "a > 5", sql: true},
		{typ: "sql92", expr: "TAGS = 'x'", sql: true},
		{typ: "SQL92", expr: "a >", parseErr: true},
		{typ: "SQL92", expr: "TagA || TagB", parseErr: true}, // Go's PostSubscriptionWhenPull labels SQL "TAG"; the reverse fails loudly
		{typ: "BLOOM", expr: "x", errIs: ErrUnsupportedExpression},
	}
	for _, tt := range tests {
		f, err := CompileFilter(tt.typ, tt.expr)
		var pe *sql92.ParseError
		switch {
		case tt.parseErr:
			if !errors.As(err, &pe) {
				t.Errorf("CompileFilter(%s, %q) = %v, want a *sql92.ParseError", tt.typ, tt.expr, err)
			}
		case tt.errIs != nil:
			if !errors.Is(err, tt.errIs) {
				t.Errorf("CompileFilter(%s, %q) = %v, want %v", tt.typ, tt.expr, err, tt.errIs)
			}
		case err != nil:
			t.Errorf("CompileFilter(%s, %q): %v", tt.typ, tt.expr, err)
		case f.NeedsRecord() != tt.sql:
			t.Errorf("CompileFilter(%s, %q).NeedsRecord() = %v, want %v", tt.typ, tt.expr, f.NeedsRecord(), tt.sql)
		case tt.sql && !f.Match(12345):
			t.Errorf("SQL filter %q rejected a consume-queue unit; units must all pass", tt.expr)
		}
	}
	tag := ParseFilter("TagA")
	if !tag.MatchRecord(nil) {
		t.Error("a tag filter must pass every record")
	}
	sqlf, _ := CompileFilter(ExpressionSQL92, "TRUE")
	if sqlf.MatchRecord([]byte("not a record")) {
		t.Error("a SQL filter matched bytes that are not a record")
	}
}

func TestFilterCacheCompilesOnce(t *testing.T) {
	c := NewFilterCache(3)
	a1, err := c.Get(ExpressionSQL92, "a > 5", 1)
	if err != nil {
		t.Fatal(err)
	}
	a2, _ := c.Get(ExpressionSQL92, "a > 5", 1)
	if a1.SQL != a2.SQL {
		t.Error("the same subscription was compiled twice")
	}
	b, _ := c.Get(ExpressionSQL92, "a > 5", 2)
	if b.SQL == a1.SQL {
		t.Error("a new subscription version reused the old entry")
	}
	_, err1 := c.Get(ExpressionSQL92, "a >", 1)
	_, err2 := c.Get(ExpressionSQL92, "a >", 1)
	if err1 == nil || err1 != err2 {
		t.Errorf("a failed compile is not cached: %v, %v", err1, err2)
	}
	if c.Len() != 3 {
		t.Errorf("Len = %d, want 3", c.Len())
	}
	// Touch "a > 5"@1 so that "a > 5"@2 is the least recently used.
	c.Get(ExpressionSQL92, "a > 5", 1)
	c.Get(ExpressionTag, "TagA", 0)
	if c.Len() != 3 {
		t.Errorf("Len = %d after an eviction, want 3", c.Len())
	}
	if a3, _ := c.Get(ExpressionSQL92, "a > 5", 1); a3.SQL != a1.SQL {
		t.Error("the recently used entry was evicted")
	}
	if b2, _ := c.Get(ExpressionSQL92, "a > 5", 2); b2.SQL == b.SQL {
		t.Error("the least recently used entry was kept")
	}
}

func TestFilterCacheConcurrent(t *testing.T) {
	c := NewFilterCache(8)
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				f, err := c.Get(ExpressionSQL92, fmt.Sprintf("a > %d", i%16), 1)
				if err != nil || f.SQL == nil {
					t.Errorf("Get: %v", err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if c.Len() > 8 {
		t.Errorf("Len = %d, over the size 8", c.Len())
	}
}

func TestFilterCacheCheck(t *testing.T) {
	c := NewFilterCache(0)
	tests := []struct {
		typ, expr string
		code      int32
		remark    string
	}{
		{"TAG", "TagA || TagB", wirecode.Success, ""},
		{"", "*", wirecode.Success, ""},
		{"SQL92", "a > 5 AND b IS NULL", wirecode.Success, ""},
		{"SQL92", "a > 'x'", wirecode.SubscriptionParseFailed, `SQL92 subscription "a > 'x'" does not compile: sql92: column 5`},
		{"SQL92", "", wirecode.SubscriptionParseFailed, "empty expression"},
		{"XPATH", "/a", wirecode.SubscriptionParseFailed, "unsupported expression type"},
	}
	for _, tt := range tests {
		code, remark := c.Check(tt.typ, tt.expr, 7)
		if code != tt.code || !strings.Contains(remark, tt.remark) || (tt.remark == "" && remark != "") {
			t.Errorf("Check(%s, %q) = %d %q, want %d containing %q", tt.typ, tt.expr, code, remark, tt.code, tt.remark)
		}
	}
}

// BenchmarkPullFiltered compares a pull that filters by tag (consume-queue
// tag codes, only matching records are read) with one that filters with
// SQL92 (every record read and evaluated), half the messages matching. The
// issue's bar: SQL92-filtered pulls at least half as fast as tag-filtered.
func BenchmarkPullFiltered(b *testing.B) {
	st, err := storage.Open(b.TempDir(), storage.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	r := &rig{st: st}
	const n = 4096
	for i := 0; i < n; i++ {
		tag := "TagA"
		if i%2 == 1 {
			tag = "TagB"
		}
		r.putProps(b, "T", 0, map[string]string{"TAGS": tag, "KEYS": fmt.Sprintf("k%d", i),
			"UNIQ_KEY": fmt.Sprintf("7F0000010A2B18B4AAC25E3B6E8A%04X", i), "price": fmt.Sprint(i % 100)})
		// Another queue's message in between, as with concurrent producers:
		// records of one queue are not adjacent in the CommitLog.
		r.putProps(b, "T", 1, map[string]string{"TAGS": tag})
	}
	p := &reader{opts: &Options{Store: st, MaxBytes: 4 << 20, Logger: zerolog.Nop()}}
	sqlf, err := CompileFilter(ExpressionSQL92, "TAGS = 'TagA'")
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name   string
		filter Filter
	}{{"tag", ParseFilter("TagA")}, {"sql92", sqlf}} {
		b.Run(bc.name, func(b *testing.B) {
			msgs := 0
			for b.Loop() {
				for off := int64(0); off < n; {
					req := request("T", 0, off, 32, "*")
					req.Filter = bc.filter
					resp, _ := p.read(req)
					if resp.Outcome != Found {
						break // the last message does not match
					}
					for body := resp.Body; len(body) > 0; body = body[message.PeekTotalSize(body):] {
						msgs++
					}
					off = resp.Next
				}
			}
			if msgs != b.N*n/2 {
				b.Fatalf("%d messages delivered, want %d", msgs, b.N*n/2)
			}
			b.ReportMetric(float64(msgs)/b.Elapsed().Seconds(), "msgs/s")
		})
	}
}

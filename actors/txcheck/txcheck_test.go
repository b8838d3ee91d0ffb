package txcheck

import (
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/wheelmq/wheelmq/actors/timer"
	"github.com/wheelmq/wheelmq/actors/writer"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/message"
	"github.com/wheelmq/wheelmq/storage/meta"
)

// bodies lists the bodies of a queue's messages.
func bodies(recs []message.Record) []string {
	var out []string
	for _, r := range recs {
		out = append(out, string(r.Body))
	}
	return out
}

// TestEndTransaction walks commit, rollback, their repeats and conflicts,
// and the refusals, checking what reaches the real topic and the op queue.
func TestEndTransaction(t *testing.T) {
	r := newRig(t, "", nil)
	a := r.sendHalf("PG", "orders", 2, nil)
	b := r.sendHalf("PG", "orders", 1, nil)
	c := r.sendHalf("PG", "orders", 0, nil)
	r.waitFor("three open transactions", func() bool { return len(r.open()) == 3 })

	steps := []struct {
		name   string
		tx     sent
		commit bool
		code   int32
	}{
		{"commit a", a, true, remoting.Success},
		{"commit a again", a, true, remoting.Success},
		{"roll back committed a", a, false, remoting.SystemError},
		{"roll back b", b, false, remoting.Success},
		{"roll back b again", b, false, remoting.Success},
		{"commit rolled-back b", b, true, remoting.SystemError},
	}
	for _, s := range steps {
		if code, remark := r.end(s.tx, s.commit); code != s.code {
			t.Errorf("%s: code %d (%s), want %d", s.name, code, remark, s.code)
		}
	}
	for _, bad := range []struct {
		name   string
		end    End
		remark string
	}{
		{"wrong group", End{ProducerGroup: "OTHER", HalfOffset: c.halfOffset, CommitLogOffset: c.commitLog, Commit: true},
			"The producer group wrong"},
		{"wrong half offset", End{ProducerGroup: "PG", HalfOffset: c.halfOffset + 1, CommitLogOffset: c.commitLog, Commit: true},
			"The transaction state table offset wrong"},
		{"no record there", End{ProducerGroup: "PG", HalfOffset: c.halfOffset, CommitLogOffset: c.commitLog + 3, Commit: true},
			"Find prepared transaction message failed"},
		{"beyond the log", End{ProducerGroup: "PG", HalfOffset: 0, CommitLogOffset: 1 << 40, Commit: true},
			"Find prepared transaction message failed"},
	} {
		e := bad.end
		if code, remark := r.endWith(&e); code != remoting.SystemError || remark != bad.remark {
			t.Errorf("%s: %d %q, want SYSTEM_ERROR %q", bad.name, code, remark, bad.remark)
		}
	}
	// A committed message is not a half message: ending it is refused.
	orders := r.records("orders", 2)
	if len(orders) != 1 || string(orders[0].Body) != a.body {
		t.Fatalf("orders/2 holds %v, want exactly a's message once", bodies(orders))
	}
	if code, _ := r.endWith(&End{ProducerGroup: "PG", HalfOffset: 0, CommitLogOffset: orders[0].PhysicalOffset, Commit: true}); code != remoting.SystemError {
		t.Errorf("END on a committed message: code %d, want SYSTEM_ERROR", code)
	}

	m := orders[0]
	props := message.DecodeProperties(m.Properties)
	if message.TransactionType(m.SysFlag) != message.SysFlagTransactionCommit || m.PreparedTransactionOffset != a.commitLog ||
		m.Flag != 7 || m.QueueID != 2 {
		t.Errorf("committed record: sysFlag %#x prepared offset %d flag %d queue %d", m.SysFlag, m.PreparedTransactionOffset, m.Flag, m.QueueID)
	}
	for _, gone := range []string{message.PropRealTopic, message.PropRealQueueID, message.PropTranMsg} {
		if _, ok := props[gone]; ok {
			t.Errorf("committed message still has %s", gone)
		}
	}
	if props[message.PropUniqKey] != a.uniq || props[message.PropProducerGroup] != "PG" || props[message.PropTags] != "tag" ||
		props[message.PropTransactionID] != a.uniq {
		t.Errorf("committed message properties %v", props)
	}
	if got := r.records("orders", 1); len(got) != 0 {
		t.Errorf("rolled-back b reached orders/1: %v", bodies(got))
	}
	ops := r.records(meta.TopicTransOpHalf, 0)
	want := map[string]string{strconv.FormatInt(a.halfOffset, 10) + ",": "commit", strconv.FormatInt(b.halfOffset, 10) + ",": "rollback"}
	if len(ops) != 2 {
		t.Fatalf("op queue holds %v, want one record per end", bodies(ops))
	}
	for _, op := range ops {
		tags, _ := message.LookupProperty(op.Properties, message.PropTags)
		outcome, _ := message.LookupProperty(op.Properties, PropOutcome)
		if tags != OpTag || want[string(op.Body)] != outcome {
			t.Errorf("op record %q tags %q outcome %q", op.Body, tags, outcome)
		}
	}
	open := r.open()
	if _, ok := open[c.halfOffset]; len(open) != 1 || !ok {
		t.Errorf("open transactions %v, want only c (%d)", open, c.halfOffset)
	}
	if r.ends("commit") != 1 || r.ends("rollback") != 1 {
		t.Errorf("ends: commit %v rollback %v, want 1 and 1", r.ends("commit"), r.ends("rollback"))
	}
}

// TestEndBeforeRead: an end that arrives before the stage read its half
// message from the queue (dispatch lag) is applied, and the half message
// is not reopened when it is read.
func TestEndBeforeRead(t *testing.T) {
	r := newRig(t, "", nil)
	r.stopTx()
	a := r.sendHalf("PG", "T", 0, nil)
	r.waitDispatched()
	r.startTx()
	if code, remark := r.end(a, true); code != remoting.Success {
		t.Fatalf("commit: %d %s", code, remark)
	}
	b := r.sendHalf("PG", "T", 0, nil)
	r.waitFor("b open", func() bool { _, ok := r.open()[b.halfOffset]; return ok })
	if _, ok := r.open()[a.halfOffset]; ok {
		t.Error("a reopened after its commit")
	}
	if got := r.records("T", 0); len(got) != 1 {
		t.Errorf("T/0 holds %v, want a once", bodies(got))
	}
}

// TestCommittedTimerWaitsFromCommit: a half message with a delay is
// committed into the timer topic, due the delay after the commit.
func TestCommittedTimerWaitsFromCommit(t *testing.T) {
	r := newRig(t, "", nil)
	a := r.sendHalf("PG", "T", 3, map[string]string{message.PropTimerDelayMS: "60000"})
	time.Sleep(20 * time.Millisecond)
	before := time.Now().UnixMilli()
	if code, remark := r.end(a, true); code != remoting.Success {
		t.Fatalf("commit: %d %s", code, remark)
	}
	recs := r.records(timer.Topic, 0)
	if len(recs) != 1 {
		t.Fatalf("timer queue holds %d records, want 1", len(recs))
	}
	props := message.DecodeProperties(recs[0].Properties)
	due, _ := strconv.ParseInt(props[message.PropTimerOutMS], 10, 64)
	if props[message.PropRealTopic] != "T" || props[message.PropRealQueueID] != "3" || due < before+60000 || due > time.Now().UnixMilli()+60000 {
		t.Errorf("timer properties %v (commit at %d)", props, before)
	}
	if len(r.records("T", 3)) != 0 {
		t.Error("a delayed commit reached its topic at once")
	}
	// An illegal delay is refused at commit and the transaction stays open.
	bad := r.sendHalf("PG", "T", 0, map[string]string{message.PropTimerDelayMS: strconv.Itoa(2 * 3600 * 1000)})
	if code, _ := r.end(bad, true); code != remoting.MessageIllegal {
		t.Errorf("commit beyond the max delay: code %d, want MESSAGE_ILLEGAL", code)
	}
	if _, ok := r.open()[bad.halfOffset]; !ok {
		t.Error("a refused commit closed the transaction")
	}
}

// TestChecksThenGiveUp: an open transaction is checked after the timeout,
// every interval, with the half message as the producer sent it; checks
// that no producer takes are not counted; after MaxChecks it is moved to
// the discard topic.
func TestChecksThenGiveUp(t *testing.T) {
	r := newRig(t, "", func(o *Options) {
		o.Timeout, o.CheckInterval, o.MaxChecks = 30*time.Millisecond, 20*time.Millisecond, 3
	})
	r.mu.Lock()
	r.online = false
	r.mu.Unlock()
	a := r.sendHalf("PG", "orders", 5, nil)
	r.waitFor("a check nobody took", func() bool { return counter(t, r.metrics.Checks.WithLabelValues("no_producer")) >= 2 })
	if n := r.open()[a.halfOffset]; n != 0 {
		t.Fatalf("checks nobody took were counted: %d", n)
	}
	r.mu.Lock()
	r.online = true
	r.mu.Unlock()
	r.waitFor("the discard", func() bool { return counter(t, r.metrics.Discarded) == 1 })
	checks := r.checkRequests()
	if len(checks) != 3 {
		t.Fatalf("%d checks delivered, want 3", len(checks))
	}
	for i, f := range checks {
		if f.Code() != remoting.CheckTransactionState || f.TranStateTableOffset != a.halfOffset ||
			f.CommitLogOffset != a.commitLog || f.MsgID != a.uniq || f.TransactionID != a.uniq ||
			f.OffsetMsgID != message.OffsetMsgID(host, a.commitLog) || f.BrokerName != "broker-t" ||
			f.Topic != meta.TopicTransHalf {
			t.Errorf("check %d: %+v", i, f)
		}
		// The Go client's own decoder reads the body.
		msgs := primitive.DecodeMessage(f.Message)
		if len(msgs) != 1 {
			t.Fatalf("check %d: body decodes to %d messages", i, len(msgs))
		}
		m := msgs[0]
		if m.Topic != "orders" || m.Queue.QueueId != 5 || string(m.Body) != a.body || m.GetProperty("PGROUP") != "PG" ||
			m.GetProperty("UNIQ_KEY") != a.uniq || m.GetProperty("TRANSACTION_CHECK_TIMES") != strconv.Itoa(i+1) ||
			m.CommitLogOffset != a.commitLog || m.QueueOffset != a.halfOffset {
			t.Errorf("check %d body: %+v", i, m)
		}
	}
	if len(r.open()) != 0 {
		t.Errorf("given-up transaction still open: %v", r.open())
	}
	discarded := r.records(meta.TopicTransCheckMaxTime, 0)
	if len(discarded) != 1 || string(discarded[0].Body) != a.body || discarded[0].PreparedTransactionOffset != a.commitLog {
		t.Fatalf("discard topic holds %v", bodies(discarded))
	}
	if got := message.DecodeProperties(discarded[0].Properties)[message.PropTransactionCheckTimes]; got != "3" {
		t.Errorf("discard copy TRANSACTION_CHECK_TIMES = %q, want 3", got)
	}
	r.mu.Lock()
	ensured := r.ensured
	r.mu.Unlock()
	if len(ensured) == 0 || ensured[0] != meta.TopicTransCheckMaxTime {
		t.Errorf("discard topic not ensured: %v", ensured)
	}
	if len(r.records("orders", 5)) != 0 {
		t.Error("a given-up transaction reached its topic")
	}
	// A late commit of a given-up transaction still delivers it.
	if code, remark := r.end(a, true); code != remoting.Success {
		t.Fatalf("late commit: %d %s", code, remark)
	}
	if got := r.records("orders", 5); len(got) != 1 {
		t.Errorf("late commit: orders/5 holds %v", bodies(got))
	}
}

// TestImmunityTime: CHECK_IMMUNITY_TIME_IN_SECONDS delays the first check,
// and an end outside a check after it is refused (604).
func TestImmunityTime(t *testing.T) {
	var skew atomic.Int64 // the stage's clock runs ahead by this many ms
	r := newRig(t, "", func(o *Options) {
		o.Timeout, o.CheckInterval = 10*time.Millisecond, time.Hour
		o.Now = func() time.Time { return time.Now().Add(time.Duration(skew.Load()) * time.Millisecond) }
	})
	immune := r.sendHalf("PG", "T", 0, map[string]string{message.PropCheckImmunityTimeSec: "3600"})
	plain := r.sendHalf("PG", "T", 0, nil)
	r.waitFor("plain checked", func() bool { return r.open()[plain.halfOffset] == 1 })
	if n := r.open()[immune.halfOffset]; n != 0 {
		t.Errorf("immune transaction checked %d times within its immunity", n)
	}
	if code, _ := r.end(immune, true); code != remoting.Success {
		t.Errorf("end within immunity: code %d", code)
	}
	old := r.sendHalf("PG", "T", 0, map[string]string{message.PropCheckImmunityTimeSec: "1"})
	skew.Store(1500) // past its 1 s immunity
	if code, _ := r.end(old, true); code != remoting.IllegalOperation {
		t.Errorf("late end outside a check: code %d, want 604", code)
	}
	if code, _ := r.endWith(&End{ProducerGroup: "PG", HalfOffset: old.halfOffset, CommitLogOffset: old.commitLog, Commit: true, FromCheck: true}); code != remoting.Success {
		t.Errorf("late end from a check: code %d, want SUCCESS", code)
	}
}

// TestRestartKeepsState: open transactions and their check counts survive a
// stop; ended ones stay ended.
func TestRestartKeepsState(t *testing.T) {
	r := newRig(t, "", func(o *Options) { o.Timeout, o.CheckInterval = 10*time.Millisecond, 15*time.Millisecond })
	a := r.sendHalf("PG", "T", 0, nil)
	b := r.sendHalf("PG", "T", 0, nil)
	r.waitFor("two checks of a", func() bool { return r.open()[a.halfOffset] >= 2 })
	if code, _ := r.end(b, false); code != remoting.Success {
		t.Fatal("rollback b")
	}
	checks := r.open()[a.halfOffset]
	r.stopTx()
	r.opts.CheckInterval = time.Hour
	r.startTx()
	open := r.open()
	if len(open) != 1 || open[a.halfOffset] != checks {
		t.Fatalf("after restart open = %v, want a with %d checks", open, checks)
	}
	// b's rollback record was not durable when the state was saved (this
	// rig never fsyncs the CommitLog), so the state kept b open and the
	// restart scan found its end again: a repeat of it is answered as
	// done, a conflicting one refused, and neither writes anything.
	if code, _ := r.end(b, false); code != remoting.Success {
		t.Errorf("repeated rollback of b after the restart: code %d", code)
	}
	if code, _ := r.end(b, true); code != remoting.SystemError {
		t.Errorf("commit of b rolled back before the restart: code %d, want SYSTEM_ERROR", code)
	}
	if got := r.records("T", 0); len(got) != 0 {
		t.Errorf("b rolled back before the restart reached T/0: %v", bodies(got))
	}
}

// TestCrashBetweenCommitAndState: the stage dies after a commit reached
// the CommitLog but before its state was persisted. The restart scan finds
// the commit: the transaction is not reopened, a repeated commit writes
// nothing, and no check asks about it.
func TestCrashBetweenCommitAndState(t *testing.T) {
	dir := t.TempDir()
	r := newRig(t, dir, nil)
	a := r.sendHalf("PG", "T", 0, nil)
	b := r.sendHalf("PG", "T", 0, nil)
	r.waitFor("both open", func() bool { return len(r.open()) == 2 })
	r.stopTx() // persists: a and b open
	saved, _, err := meta.LoadTransactionState(nil, r.opts.StatePath)
	if err != nil || len(saved.Pending) != 2 {
		t.Fatalf("saved state %+v %v", saved, err)
	}
	// What the stage would have written for "commit a", "roll back b"
	// before dying: the committed message, and b's op record.
	h, err := (&Stage{opts: r.opts}).readHalfAt(a.commitLog)
	if err != nil {
		t.Fatal(err)
	}
	key, rec, code, _ := commitRecord(h, time.Now().UnixMilli(), r.opts.Timer)
	if code != 0 {
		t.Fatal(code)
	}
	r.appendRaw(key, rec)
	hb, err := (&Stage{opts: r.opts}).readHalfAt(b.commitLog)
	if err != nil {
		t.Fatal(err)
	}
	op, _ := opRecord(hb, b.halfOffset, Rollback, time.Now().UnixMilli())
	r.appendRaw(writer.QueueKey{Topic: meta.TopicTransOpHalf}, op)
	if err := meta.SaveTransactionState(nil, r.opts.StatePath, saved); err != nil { // the stop's save never happened
		t.Fatal(err)
	}
	r.opts.Timeout, r.opts.CheckInterval = time.Millisecond, time.Millisecond
	r.startTx()
	if open := r.open(); len(open) != 0 {
		t.Fatalf("after the crash open = %v, want none", open)
	}
	if code, remark := r.end(a, true); code != remoting.Success {
		t.Fatalf("repeated commit: %d %s", code, remark)
	}
	if code, _ := r.end(b, true); code != remoting.Success && code != remoting.SystemError {
		t.Fatalf("commit after rollback: %d", code)
	}
	time.Sleep(30 * time.Millisecond)
	if got := r.records("T", 0); len(got) != 1 || string(got[0].Body) != a.body {
		t.Errorf("T/0 holds %v, want a exactly once", bodies(got))
	}
	if n := len(r.checkRequests()); n != 0 {
		t.Errorf("%d checks about ended transactions", n)
	}
}

// TestWatermark: the watermark is the oldest open half message, and moves
// on when it ends.
func TestWatermark(t *testing.T) {
	r := newRig(t, "", nil)
	a := r.sendHalf("PG", "T", 0, nil)
	b := r.sendHalf("PG", "T", 0, nil)
	r.waitFor("watermark at a", func() bool { return r.opts.Watermark.Load() == a.commitLog })
	r.end(a, true)
	r.waitFor("watermark at b", func() bool { return r.opts.Watermark.Load() == b.commitLog })
	r.end(b, false)
	r.waitFor("watermark past b", func() bool { return r.opts.Watermark.Load() > b.commitLog })
}

// TestSupervisorRestart: after a panic the stage comes back from its state
// and the CommitLog; a writer answer to the previous instance still ends
// its transaction.
func TestSupervisorRestart(t *testing.T) {
	r := newRig(t, "", nil)
	a := r.sendHalf("PG", "T", 0, nil)
	b := r.sendHalf("PG", "T", 0, nil)
	r.waitFor("both open", func() bool { return len(r.open()) == 2 })
	if code, _ := r.end(a, true); code != remoting.Success {
		t.Fatal("commit a")
	}
	r.tx.Send(inspect{reply: func(*Stage) { panic("injected") }})
	r.waitFor("the restart", func() bool {
		ch := make(chan uint64, 1)
		r.tx.Send(inspect{reply: func(s *Stage) { ch <- s.epoch }})
		select {
		case e := <-ch:
			return e == 2
		case <-time.After(time.Second):
			return false
		}
	})
	if open := r.open(); len(open) != 1 {
		t.Fatalf("after the restart open = %v, want only b", open)
	}
	// The previous instance's rollback of b, answered after the restart.
	r.tx.Send(&written{epoch: 1, id: 7, q: b.halfOffset, outcome: Rollback, step: stepOp})
	r.waitFor("b ended", func() bool { return len(r.open()) == 0 })
	if code, _ := r.end(b, false); code != remoting.Success {
		t.Errorf("repeated rollback after the restart: code %d", code)
	}
	if got := r.records("T", 0); len(got) != 1 || string(got[0].Body) != a.body {
		t.Errorf("T/0 holds %v, want a once", bodies(got))
	}
}

// TestLiveTuning: with Options.Live the stage reads its tuning in force
// each time: a transaction checked every few milliseconds under a limit of
// 100 checks is given up as soon as the limit drops to what it has had.
func TestLiveTuning(t *testing.T) {
	var maxChecks atomic.Int64
	maxChecks.Store(100)
	r := newRig(t, "", func(o *Options) {
		o.Live = func() Tuning {
			return Tuning{Timeout: 5 * time.Millisecond, CheckInterval: 5 * time.Millisecond, MaxChecks: int(maxChecks.Load())}
		}
	})
	a := r.sendHalf("PG", "T", 0, nil)
	r.waitFor("two checks", func() bool { return r.open()[a.halfOffset] >= 2 })
	maxChecks.Store(2)
	r.waitFor("the discard", func() bool { return counter(t, r.metrics.Discarded) == 1 })
	if open := r.open(); len(open) != 0 {
		t.Fatalf("open after the discard: %v", open)
	}
}

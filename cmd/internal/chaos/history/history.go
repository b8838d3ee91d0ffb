// Package history records a chaos run Jepsen-style and checks it.
//
// A history is a JSONL file, one Op per line, appended by many goroutines
// through one Recorder. A send is an "invoke" followed by exactly one of
// "ok" (the broker answered SEND_OK), "fail" (a definite refusal: nothing
// was written) or "info" (indeterminate: a timeout, a connection error,
// FLUSH_DISK_TIMEOUT 11 or FLUSH_SLAVE_TIMEOUT 12, or any error after the
// client's own retries). A timer cancel is the same four with F "cancel"
// and Key naming the timer it cancels. Every delivery to a consumer is a
// "recv". Nemesis actions are F "nemesis" lines (Note says what was done),
// so a reader sees the faults between the operations.
//
// Line layout (JSON object; absent fields omitted):
//
//	{"type":"invoke|ok|fail|info|recv","f":"send|cancel|recv|nemesis",
//	 "process":P,"key":K,"topic":T,"timer":true,"due_ms":D,
//	 "code":C,"err":E,"msg_id":M,"broker":B,"queue":Q,"queue_offset":O,
//	 "time_ms":W,"note":N}
//
// time_ms and due_ms are Unix milliseconds of the host clock (every part of
// the test runs on one host, so receive times and due times compare).
package history

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// Op types.
const (
	Invoke = "invoke"
	OK     = "ok"
	Fail   = "fail"
	Info   = "info"
	Recv   = "recv"
)

// Op functions.
const (
	FSend    = "send"
	FCancel  = "cancel"
	FRecv    = "recv"
	FNemesis = "nemesis"
)

// Op is one line of the history.
type Op struct {
	// Type is invoke, ok, fail, info or recv.
	Type string `json:"type"`
	// F is the operation: send, cancel, recv or nemesis.
	F string `json:"f"`
	// Process is the producer or consumer number.
	Process int `json:"process"`
	// Key is the message's key (the chaos test's own unique id, carried as
	// the message's KEYS and body); for a cancel, the cancelled timer's key.
	Key string `json:"key,omitempty"`
	// Topic is the message's topic.
	Topic string `json:"topic,omitempty"`
	// Timer marks a timer message; DueMs is its delivery time.
	Timer bool  `json:"timer,omitempty"`
	DueMs int64 `json:"due_ms,omitempty"`
	// Code is the broker's answer code when there was one (-1: none).
	Code int `json:"code,omitempty"`
	// Err is the client's error text.
	Err string `json:"err,omitempty"`
	// MsgID is the client's UNIQ_KEY of the message.
	MsgID string `json:"msg_id,omitempty"`
	// Broker is the broker name that stored (ok) or delivered (recv) it.
	Broker string `json:"broker,omitempty"`
	// Queue and QueueOffset locate the message, when known.
	Queue       int   `json:"queue"`
	QueueOffset int64 `json:"queue_offset"`
	// TimeMs is the wall time of the event.
	TimeMs int64 `json:"time_ms"`
	// Note is free text (nemesis lines).
	Note string `json:"note,omitempty"`
}

// Recorder appends ops to a history; safe for concurrent use.
type Recorder struct {
	mu  sync.Mutex
	ops []Op
	w   *bufio.Writer
	f   *os.File
	err error
}

// NewRecorder writes the history to path (truncated) and keeps it in
// memory for the checker.
func NewRecorder(path string) (*Recorder, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("history: create %s: %w", path, err)
	}
	return &Recorder{f: f, w: bufio.NewWriter(f)}, nil
}

// NewMemRecorder keeps the history in memory only.
func NewMemRecorder() *Recorder { return &Recorder{} }

// Add appends op, stamping TimeMs with now when it is zero.
func (r *Recorder) Add(op Op) {
	if op.TimeMs == 0 {
		op.TimeMs = time.Now().UnixMilli()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ops = append(r.ops, op)
	if r.w != nil && r.err == nil {
		b, err := json.Marshal(op)
		if err == nil {
			b = append(b, '\n')
			_, err = r.w.Write(b)
		}
		r.err = err
	}
}

// Nemesis records a fault or heal.
func (r *Recorder) Nemesis(note string) { r.Add(Op{Type: Info, F: FNemesis, Note: note}) }

// Ops copies the history so far.
func (r *Recorder) Ops() []Op {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Op(nil), r.ops...)
}

// Close flushes and closes the file.
func (r *Recorder) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.f == nil {
		return nil
	}
	err := r.err
	if ferr := r.w.Flush(); err == nil {
		err = ferr
	}
	if cerr := r.f.Close(); err == nil {
		err = cerr
	}
	r.f = nil
	if err != nil {
		return fmt.Errorf("history: write: %w", err)
	}
	return nil
}

// Read parses a JSONL history.
func Read(rd io.Reader) ([]Op, error) {
	var ops []Op
	sc := bufio.NewScanner(rd)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for line := 1; sc.Scan(); line++ {
		if len(sc.Bytes()) == 0 {
			continue
		}
		var op Op
		if err := json.Unmarshal(sc.Bytes(), &op); err != nil {
			return nil, fmt.Errorf("history: line %d: %w", line, err)
		}
		ops = append(ops, op)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("history: read: %w", err)
	}
	return ops, nil
}

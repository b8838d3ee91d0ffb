package pull

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/wheelmq/wheelmq/storage"
	"github.com/wheelmq/wheelmq/storage/consumequeue"
	"github.com/wheelmq/wheelmq/storage/corruption"
)

// flipAt inverts one byte of a file in place.
func flipAt(t *testing.T, path string, pos int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, pos); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x5a
	if _, err := f.WriteAt(b, pos); err != nil {
		t.Fatal(err)
	}
}

// damageCase is one case of TestPullOverDamage.
type damageCase struct {
	name   string
	policy corruption.Policy
	damage string // "message" or "unit"
	first  []int  // records in the first answer
	next   int64  // its nextBeginOffset
	second string // remark of the pull from next ("" if not pulled)
}

// TestPullOverDamage pulls across a damaged message or a damaged unit, with
// a tag filter and with a SQL92 filter (which reads every record): a
// damaged message is skipped (skip) or ends the pull (stop); a damaged unit
// ends the pull and is reported for a rebuild.
func TestPullOverDamage(t *testing.T) {
	for _, tc := range []damageCase{
		{"damaged message, skip", corruption.PolicySkip, "message", []int{0, 1, 3, 4}, 5, ""},
		{"damaged message, stop", corruption.PolicyStop, "message", []int{0, 1}, 2, "is damaged (on-corruption=stop)"},
		{"damaged unit, skip", corruption.PolicySkip, "unit", []int{0, 1}, 2, "being rebuilt"},
		{"damaged unit, stop", corruption.PolicyStop, "unit", []int{0, 1}, 2, "being rebuilt"},
	} {
		for _, sql := range []bool{false, true} {
			name := tc.name
			if sql {
				name += ", SQL92 filter"
			}
			t.Run(name, func(t *testing.T) { pullOverDamage(t, tc, sql) })
		}
	}
}

func pullOverDamage(t *testing.T, tc damageCase, sql bool) {
	newReq := func(offset int64) *Request {
		if sql {
			return sqlRequest(t, "T", offset, 32, "TRUE")
		}
		return request("T", 0, offset, 32, "*")
	}
	m := corruption.NewMetrics(prometheus.NewRegistry())
	r := newRig(t, storage.Options{OnCorruption: tc.policy, Corruption: m})
	var recs [][]byte
	for i := 0; i < 5; i++ {
		recs = append(recs, r.put(t, "T", 0, "", int64(i)))
	}
	u, err := r.st.Queues.Lookup("T", 0).Read(2, 1)
	if err != nil {
		t.Fatal(err)
	}
	switch tc.damage {
	case "message":
		flipAt(t, filepath.Join(r.st.CommitLog.Dir(), fmt.Sprintf("%020d", 0)), u[0].Offset+int64(u[0].Size)-6)
	case "unit":
		flipAt(t, filepath.Join(r.dir, "consumequeue", "T", "0", fmt.Sprintf("%020d", 0)), 2*consumequeue.UnitSize+6)
	}
	r.start(t, 0)
	req := newReq(0)
	got := r.pull(t, req)
	var body [][]byte
	for _, i := range tc.first {
		body = append(body, recs[i])
	}
	check(t, "first pull", req, got, want{code: Found, remark: "FOUND", next: tc.next, min: 0, max: 5, body: cat(body...)})
	if tc.second != "" {
		got = r.pull(t, newReq(tc.next))
		if got.Outcome != Failed || !strings.Contains(got.Remark, tc.second) {
			t.Fatalf("pull from %d: code %d %q, want SYSTEM_ERROR with %q", tc.next, got.Outcome, got.Remark, tc.second)
		}
	}
	damaged := r.st.TakeDamagedUnits()
	wantReport := tc.damage == "unit"
	if (damaged[consumequeue.QueueID{Topic: "T", QueueID: 0}] == 2) != wantReport || (len(damaged) == 1) != wantReport {
		t.Fatalf("damaged units reported %v (damage %s)", damaged, tc.damage)
	}
	wantBytes := int64(0)
	if tc.damage == "message" && tc.policy == corruption.PolicySkip {
		wantBytes = int64(u[0].Size) + 4
	}
	if got := m.Counted(corruption.FileCommitLog); got != wantBytes {
		t.Fatalf("counted %d commitlog bytes, want %d", got, wantBytes)
	}
}

// TestPullSkipsHoles pulls a queue with a hole unit (a message lost to
// CommitLog damage): the hole is passed over and the offsets stay aligned.
func TestPullSkipsHoles(t *testing.T) {
	r := newRig(t, storage.Options{})
	a := r.put(t, "T", 0, "", 1)
	q := r.st.Queues.Lookup("T", 0)
	last, _ := q.LastUnit()
	if err := q.Append(consumequeue.Hole(last.Offset + 1)); err != nil {
		t.Fatal(err)
	}
	b := r.put(t, "T", 0, "", 2)
	r.start(t, 0)
	req := request("T", 0, 0, 32, "*")
	check(t, "pull over a hole", req, r.pull(t, req), want{code: Found, remark: "FOUND", next: 3, max: 3, body: cat(a, b)})
	req = request("T", 0, 1, 32, "*")
	check(t, "pull from the hole", req, r.pull(t, req), want{code: Found, remark: "FOUND", next: 3, max: 3, body: b})
	req = sqlRequest(t, "T", 0, 32, "TRUE")
	check(t, "SQL92 pull over a hole", req, r.pull(t, req), want{code: Found, remark: "FOUND", next: 3, max: 3, body: cat(a, b)})
}

package grpcgw

import (
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/storage/meta"
)

// TestRenewerGivesUpByPolicy: a handle held past renewMaxHeld is given up
// as RocketMQ's proxy does, with the group's retry delay for its delivery
// attempt (not left invisible for its last renewal, up to an hour); one
// about to expire is renewed by the next step; one already expired is
// dropped; the others wait.
func TestRenewerGivesUpByPolicy(t *testing.T) {
	pol, err := meta.ParseRetryPolicy([]byte(`{"type":"EXPONENTIAL","exponentialRetryPolicy":{"initial":1000,"max":60000,"multiplier":2}}`))
	if err != nil {
		t.Fatal(err)
	}
	s := &session{id: "c1", g: &Gateway{log: zerolog.Nop()}}
	r := newRenewer(s)
	changed := map[string]time.Duration{}
	r.change = func(h heldHandle, d time.Duration) (string, error) {
		changed[h.msgID] = d
		return h.cur + "'", nil
	}
	r.policy = func(h heldHandle) meta.RetryPolicy {
		if h.group != "g" {
			t.Errorf("policy of group %q", h.group)
		}
		return pol
	}
	now := time.Unix(1_000_000, 0)
	r.held = map[string]*heldHandle{
		"old":     {cur: "old", group: "g", msgID: "old", attempt: 3, since: now.Add(-renewMaxHeld - time.Second), expires: now.Add(20 * time.Minute)},
		"due":     {cur: "due", group: "g", msgID: "due", attempt: 1, since: now.Add(-time.Minute), expires: now.Add(5 * time.Second)},
		"expired": {cur: "expired", group: "g", msgID: "expired", attempt: 1, since: now.Add(-time.Hour), expires: now},
		"later":   {cur: "later", group: "g", msgID: "later", attempt: 1, since: now, expires: now.Add(time.Minute)},
	}
	r.renewDue(now)
	if d, ok := changed["old"]; !ok || d != 4*time.Second {
		t.Errorf("given up: changed to %v (%v), want the policy's 4s for attempt 3", d, ok)
	}
	if d := changed["due"]; d != renewSteps[0] {
		t.Errorf("due: renewed by %v, want %v", d, renewSteps[0])
	}
	if _, ok := changed["expired"]; ok {
		t.Error("an expired handle was changed")
	}
	if _, ok := changed["later"]; ok {
		t.Error("a handle not yet due was changed")
	}
	if _, ok := r.held["old"]; ok {
		t.Error("a given-up handle is still held")
	}
	if _, ok := r.held["expired"]; ok {
		t.Error("an expired handle is still held")
	}
	if e := r.held["due"]; e == nil || e.cur != "due'" || e.step != 1 {
		t.Errorf("renewed handle: %+v", e)
	}
	if r.held["later"] == nil {
		t.Error("a handle not yet due was dropped")
	}
}

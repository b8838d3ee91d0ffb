package grpcgw

import (
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/storage/meta"
)

// TestBackoffOfGroupPolicy: a group's retry policy reaches the v5 SDKs as
// RocketMQ's proxy hands it out: exponential as initial, max and
// multiplier; customized as its list, from its first entry; the default
// as RocketMQ's delay levels from 1 s.
func TestBackoffOfGroupPolicy(t *testing.T) {
	exp, err := meta.ParseRetryPolicy([]byte(`{"type":"EXPONENTIAL","exponentialRetryPolicy":{"initial":250,"max":8000,"multiplier":3}}`))
	if err != nil {
		t.Fatal(err)
	}
	b := backoffOf(exp, 5)
	e := b.GetExponentialBackoff()
	if b.GetMaxAttempts() != 5 || e == nil || e.GetInitial().AsDuration() != 250*time.Millisecond ||
		e.GetMax().AsDuration() != 8*time.Second || e.GetMultiplier() != 3 {
		t.Fatalf("exponential: %v", b)
	}
	cus, _ := meta.ParseRetryPolicy([]byte(`{"type":"CUSTOMIZED","customizedRetryPolicy":{"next":[100,2000]}}`))
	next := backoffOf(cus, 3).GetCustomizedBackoff().GetNext()
	if len(next) != 2 || next[0].AsDuration() != 100*time.Millisecond || next[1].AsDuration() != 2*time.Second {
		t.Fatalf("customized: %v", next)
	}
	def, _ := meta.ParseRetryPolicy(nil)
	next = backoffOf(def, 17).GetCustomizedBackoff().GetNext()
	if len(next) != len(meta.DefaultRetryNext) || next[0].AsDuration() != time.Second || next[len(next)-1].AsDuration() != 2*time.Hour {
		t.Fatalf("default: %v", next)
	}
}

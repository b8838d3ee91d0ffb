package meta

import (
	"errors"
	"testing"
	"time"
)

// TestRetryPolicyDelays: RocketMQ's formulas (EXPONENTIAL capped at max and
// at 32 doublings, CUSTOMIZED from index 2 and then its last entry), the
// defaults, and jitter within its bounds.
func TestRetryPolicyDelays(t *testing.T) {
	def, err := ParseRetryPolicy(nil)
	if err != nil || !def.Default {
		t.Fatalf("default: %+v %v", def, err)
	}
	// Delay level 3 + n: 10 s, 30 s, 1 m ... and 2 h from n = 15 on.
	for n, want := range map[int32]time.Duration{0: 10 * time.Second, 1: 30 * time.Second, 2: time.Minute, 15: 2 * time.Hour, 40: 2 * time.Hour, -3: 10 * time.Second} {
		if got := def.Base(n); got != want {
			t.Errorf("default Base(%d) = %v, want %v", n, got, want)
		}
	}
	exp, err := ParseRetryPolicy([]byte(`{"type":"EXPONENTIAL","exponentialRetryPolicy":{"initial":1000,"max":60000,"multiplier":3}}`))
	if err != nil || exp.Default {
		t.Fatalf("exponential: %+v %v", exp, err)
	}
	for n, want := range map[int32]time.Duration{0: time.Second, 1: 3 * time.Second, 2: 9 * time.Second, 3: 27 * time.Second, 4: time.Minute, 100: time.Minute} {
		if got := exp.Base(n); got != want {
			t.Errorf("exponential Base(%d) = %v, want %v", n, got, want)
		}
	}
	expDef, err := ParseRetryPolicy([]byte(`{"type":"EXPONENTIAL"}`))
	if err != nil || expDef.Base(0) != 5*time.Second || expDef.Base(20) != 2*time.Hour {
		t.Errorf("exponential defaults: %+v %v", expDef, err)
	}
	cus, err := ParseRetryPolicy([]byte(`{"type":"CUSTOMIZED","customizedRetryPolicy":{"next":[100,200,300,400]}}`))
	if err != nil || cus.Default {
		t.Fatalf("customized: %+v %v", cus, err)
	}
	for n, want := range map[int32]time.Duration{0: 300 * time.Millisecond, 1: 400 * time.Millisecond, 9: 400 * time.Millisecond} {
		if got := cus.Base(n); got != want {
			t.Errorf("customized Base(%d) = %v, want %v", n, got, want)
		}
	}
	jit, err := ParseRetryPolicy([]byte(`{"type":"EXPONENTIAL","exponentialRetryPolicy":{"initial":1000,"max":4000,"multiplier":2},"jitter":0.25}`))
	if err != nil || jit.Default {
		t.Fatalf("jitter: %+v %v", jit, err)
	}
	if lo, mid, hi := jit.Delay(1, 0), jit.Delay(1, 0.5), jit.Delay(1, 0.999999); lo != 1500*time.Millisecond || mid != 2*time.Second || hi <= 2499*time.Millisecond || hi > 2500*time.Millisecond {
		t.Errorf("jitter 0.25 around 2 s: %v %v %v", lo, mid, hi)
	}
	if got := jit.Delay(5, 0.999); got != 4*time.Second {
		t.Errorf("jitter past max: %v, want the max 4 s", got)
	}
}

// TestRetryPolicyRefusals: what a group may not set, each named.
func TestRetryPolicyRefusals(t *testing.T) {
	for _, raw := range []string{
		`{"type":"LINEAR"}`,
		`{"type":"EXPONENTIAL","exponentialRetryPolicy":{"initial":0}}`,
		`{"type":"EXPONENTIAL","exponentialRetryPolicy":{"initial":5000,"max":1000}}`,
		`{"type":"EXPONENTIAL","exponentialRetryPolicy":{"multiplier":0}}`,
		`{"type":"CUSTOMIZED","customizedRetryPolicy":{"next":[]}}`,
		`{"type":"CUSTOMIZED","customizedRetryPolicy":{"next":[1000,-1]}}`,
		`{"type":"CUSTOMIZED","jitter":1}`,
		`{"type":"CUSTOMIZED","jitter":-0.1}`,
		`{"type":`,
	} {
		if _, err := ParseRetryPolicy([]byte(raw)); !errors.Is(err, ErrInvalidRetryPolicy) {
			t.Errorf("%s: %v, want ErrInvalidRetryPolicy", raw, err)
		}
	}
}

// TestGroupConfigRetryPolicy: a group's config gives its parsed policy, and
// the default for none or one that does not parse.
func TestGroupConfigRetryPolicy(t *testing.T) {
	c := NewSubscriptionGroupConfig("g")
	if p := c.RetryPolicy(); !p.Default || p.Base(0) != 10*time.Second {
		t.Fatalf("new group: %+v", p)
	}
	c.GroupRetryPolicy = []byte(`{"type":"EXPONENTIAL","exponentialRetryPolicy":{"initial":100,"max":400,"multiplier":2}}`)
	if p := c.RetryPolicy(); p.Default || p.Base(1) != 200*time.Millisecond {
		t.Fatalf("exponential group: %+v", p)
	}
	c.GroupRetryPolicy = []byte(`{"type":"LINEAR"}`)
	if p := c.RetryPolicy(); !p.Default {
		t.Fatalf("unparsable policy: %+v, want the default", p)
	}
}

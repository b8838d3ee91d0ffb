package meta

import (
	"testing"
	"time"

	v5utils "github.com/apache/rocketmq-clients/golang/v5/pkg/utils"
	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"
	"google.golang.org/protobuf/types/known/durationpb"
)

// TestAttemptDelayMatchesTheV5SDK: AttemptBase gives, for every attempt,
// the delay the Go v5 SDK's PushConsumer computes from the same policy
// (utils.GetNextAttemptDelay), for both types; jitter stays within its
// bounds and under an exponential policy's max.
func TestAttemptDelayMatchesTheV5SDK(t *testing.T) {
	cus, err := ParseRetryPolicy([]byte(`{"type":"CUSTOMIZED","customizedRetryPolicy":{"next":[300,600,900]}}`))
	if err != nil {
		t.Fatal(err)
	}
	exp, err := ParseRetryPolicy([]byte(`{"type":"EXPONENTIAL","exponentialRetryPolicy":{"initial":250,"max":3000,"multiplier":3}}`))
	if err != nil {
		t.Fatal(err)
	}
	next := []*durationpb.Duration{}
	for _, d := range cus.Next {
		next = append(next, durationpb.New(d))
	}
	sdk := map[string]*v2.RetryPolicy{
		"customized": {Strategy: &v2.RetryPolicy_CustomizedBackoff{CustomizedBackoff: &v2.CustomizedBackoff{Next: next}}},
		"exponential": {Strategy: &v2.RetryPolicy_ExponentialBackoff{ExponentialBackoff: &v2.ExponentialBackoff{
			Initial: durationpb.New(exp.Initial), Max: durationpb.New(exp.Max), Multiplier: float32(exp.Multiplier)}}},
	}
	for name, p := range map[string]RetryPolicy{"customized": cus, "exponential": exp} {
		for k := int32(1); k <= 6; k++ {
			want := v5utils.GetNextAttemptDelay(sdk[name], int(k))
			if got := p.AttemptBase(k); got != want {
				t.Errorf("%s attempt %d: %v, the SDK says %v", name, k, got, want)
			}
		}
	}
	if cus.AttemptBase(1) != 300*time.Millisecond || cus.AttemptBase(0) != 300*time.Millisecond {
		t.Errorf("customized starts at its first entry: %v (attempt 0: %v)", cus.AttemptBase(1), cus.AttemptBase(0))
	}
	exp.Jitter = 0.5
	for _, u := range []float64{0, 0.25, 0.5, 0.999} {
		d := exp.AttemptDelay(2, u) // 750 ms spread to [375, 1125)
		if d < 375*time.Millisecond || d > 1125*time.Millisecond {
			t.Errorf("jitter 0.5 of 750 ms at u=%v: %v", u, d)
		}
		if d := exp.AttemptDelay(9, u); d > exp.Max {
			t.Errorf("jitter past max at u=%v: %v", u, d)
		}
	}
}

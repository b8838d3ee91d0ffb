package meta

import "time"

// The v5 clients count a message's retries by delivery attempt (1 for the
// first delivery), not by reconsumeTimes: their PushConsumer, failing
// delivery attempt k, changes the message's invisible time to the delay
// of the settings' backoff policy for attempt k (the Go and Java SDKs'
// GetNextAttemptDelay):
//
//	EXPONENTIAL  min(max, initial * multiplier^(k-1))
//	CUSTOMIZED   next[min(k, len(next)) - 1]
//
// EXPONENTIAL gives the same delays as Base(k-1); CUSTOMIZED reads its
// list from the first entry, where Base (a send-back) starts at the third.
// The POP engine backs an expired delivery off by AttemptDelay, so that a
// group's POP consumers see one delay per attempt, whether their client
// nacks a message or lets its invisible time run out.

// AttemptBase is the delay after delivery attempt k (1 for the first) of
// a message failed, as the v5 clients read the policy, before jitter.
func (p RetryPolicy) AttemptBase(attempt int32) time.Duration {
	k := max(attempt, 1)
	if p.Type == RetryExponential {
		return p.Base(k - 1)
	}
	next := p.Next
	if len(next) == 0 {
		next = DefaultRetryNext
	}
	return next[min(int(k), len(next))-1]
}

// AttemptDelay is AttemptBase spread by the jitter: u is a draw from
// [0, 1). An EXPONENTIAL delay never goes past Max.
func (p RetryPolicy) AttemptDelay(attempt int32, u float64) time.Duration {
	return p.jittered(p.AttemptBase(attempt), u)
}

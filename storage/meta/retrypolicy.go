package meta

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
)

// A group's retry policy is RocketMQ 5's groupRetryPolicy object of the
// subscription group config (JSON, delays in milliseconds):
//
//	{"type":"EXPONENTIAL","exponentialRetryPolicy":{"initial":1000,"max":60000,"multiplier":2}}
//	{"type":"CUSTOMIZED","customizedRetryPolicy":{"next":[1000,5000,10000]}}
//
// with one wheelmq field RocketMQ's brokers ignore: "jitter", a fraction in
// [0, 1) by which each delay is spread evenly around its value (0.2: from
// 0.8x to 1.2x, never past the policy's max), so that messages that failed
// together do not come back together.
//
// The delay before retry n+1 of a message already consumed n times
// (reconsumeTimes n) is, as RocketMQ computes it:
//
//	EXPONENTIAL  min(max, initial * multiplier^min(n, 32))
//	CUSTOMIZED   next[min(n+2, len(next)-1)]
//
// CUSTOMIZED starts at index 2 so that its default list (RocketMQ's delay
// levels 1 s, 5 s, 10 s, 30 s, 1 m ... 2 h) gives delay level 3 + n, the
// level a push consumer's send-back has always had. The defaults:
// EXPONENTIAL initial 5 s, max 2 h, multiplier 2; CUSTOMIZED that list.

// Retry policy types (RocketMQ's GroupRetryPolicyType).
const (
	RetryCustomized  = "CUSTOMIZED"
	RetryExponential = "EXPONENTIAL"
)

// DefaultRetryNext is CUSTOMIZED's default list (RocketMQ's delay levels).
var DefaultRetryNext = []time.Duration{time.Second, 5 * time.Second, 10 * time.Second, 30 * time.Second,
	time.Minute, 2 * time.Minute, 3 * time.Minute, 4 * time.Minute, 5 * time.Minute, 6 * time.Minute,
	7 * time.Minute, 8 * time.Minute, 9 * time.Minute, 10 * time.Minute, 20 * time.Minute, 30 * time.Minute,
	time.Hour, 2 * time.Hour}

// ErrInvalidRetryPolicy is wrapped by RetryPolicy's refusals.
var ErrInvalidRetryPolicy = errors.New("invalid groupRetryPolicy")

// RetryPolicy is a group's retry policy, decoded and checked.
type RetryPolicy struct {
	// Type is RetryCustomized or RetryExponential.
	Type string
	// Initial, Max and Multiplier are EXPONENTIAL's.
	Initial, Max time.Duration
	Multiplier   int64
	// Next is CUSTOMIZED's list.
	Next []time.Duration
	// Jitter spreads each delay by up to this fraction either way.
	Jitter float64
	// Default reports that the group set nothing: the CUSTOMIZED default
	// list without jitter (send-back then keeps its delay levels).
	Default bool
}

// retryPolicyJSON is the wire object; delays in ms.
type retryPolicyJSON struct {
	Type        string `json:"type"`
	Exponential *struct {
		Initial    *int64 `json:"initial"`
		Max        *int64 `json:"max"`
		Multiplier *int64 `json:"multiplier"`
	} `json:"exponentialRetryPolicy"`
	Customized *struct {
		Next []int64 `json:"next"`
	} `json:"customizedRetryPolicy"`
	Jitter *float64 `json:"jitter"`
}

// maxRetryDelay bounds any one delay: a year, the longest timer.
const maxRetryDelay = 365 * 24 * time.Hour

// ParseRetryPolicy decodes and checks a groupRetryPolicy object (empty or
// null: the default). Refusals wrap ErrInvalidRetryPolicy and name the
// field.
func ParseRetryPolicy(raw json.RawMessage) (RetryPolicy, error) {
	p := RetryPolicy{Type: RetryCustomized, Next: DefaultRetryNext, Default: true}
	if len(raw) == 0 || string(raw) == "null" {
		return p, nil
	}
	var w retryPolicyJSON
	if err := json.Unmarshal(raw, &w); err != nil {
		return p, fmt.Errorf("%w: %v", ErrInvalidRetryPolicy, err)
	}
	switch strings.ToUpper(w.Type) {
	case "", RetryCustomized:
		p.Type = RetryCustomized
		if w.Customized != nil && w.Customized.Next != nil {
			if len(w.Customized.Next) == 0 {
				return p, fmt.Errorf("%w: customizedRetryPolicy.next is empty", ErrInvalidRetryPolicy)
			}
			p.Next = make([]time.Duration, len(w.Customized.Next))
			for i, ms := range w.Customized.Next {
				if ms <= 0 || time.Duration(ms)*time.Millisecond > maxRetryDelay {
					return p, fmt.Errorf("%w: customizedRetryPolicy.next[%d] = %d ms, want 1 ms to 365 days", ErrInvalidRetryPolicy, i, ms)
				}
				p.Next[i] = time.Duration(ms) * time.Millisecond
			}
			p.Default = false
		}
	case RetryExponential:
		p.Type, p.Next, p.Default = RetryExponential, nil, false
		p.Initial, p.Max, p.Multiplier = 5*time.Second, 2*time.Hour, 2
		if e := w.Exponential; e != nil {
			if e.Initial != nil {
				p.Initial = time.Duration(*e.Initial) * time.Millisecond
			}
			if e.Max != nil {
				p.Max = time.Duration(*e.Max) * time.Millisecond
			}
			if e.Multiplier != nil {
				p.Multiplier = *e.Multiplier
			}
		}
		switch {
		case p.Initial <= 0:
			return p, fmt.Errorf("%w: exponentialRetryPolicy.initial must be above 0 ms", ErrInvalidRetryPolicy)
		case p.Max < p.Initial || p.Max > maxRetryDelay:
			return p, fmt.Errorf("%w: exponentialRetryPolicy.max must be from initial (%d ms) to 365 days", ErrInvalidRetryPolicy, p.Initial.Milliseconds())
		case p.Multiplier < 1:
			return p, fmt.Errorf("%w: exponentialRetryPolicy.multiplier must be 1 or more", ErrInvalidRetryPolicy)
		}
	default:
		return p, fmt.Errorf("%w: type %q, want CUSTOMIZED or EXPONENTIAL", ErrInvalidRetryPolicy, w.Type)
	}
	if w.Jitter != nil {
		if j := *w.Jitter; j < 0 || j >= 1 || math.IsNaN(j) {
			return p, fmt.Errorf("%w: jitter %v, want a fraction from 0 to below 1", ErrInvalidRetryPolicy, j)
		}
		p.Jitter = *w.Jitter
		p.Default = p.Default && p.Jitter == 0
	}
	return p, nil
}

// Base is the delay before the retry of a message consumed reconsumeTimes
// times, before jitter.
func (p RetryPolicy) Base(reconsumeTimes int32) time.Duration {
	n := max(reconsumeTimes, 0)
	if p.Type == RetryExponential {
		d := p.Initial
		for i := int32(0); i < min(n, 32) && d < p.Max; i++ {
			if d > p.Max/time.Duration(max(p.Multiplier, 1)) {
				d = p.Max
				break
			}
			d *= time.Duration(p.Multiplier)
		}
		return min(d, p.Max)
	}
	next := p.Next
	if len(next) == 0 {
		next = DefaultRetryNext
	}
	return next[min(int(n)+2, len(next)-1)]
}

// Delay is Base spread by the jitter: u is a uniform draw from [0, 1).
// An EXPONENTIAL delay never goes past Max.
func (p RetryPolicy) Delay(reconsumeTimes int32, u float64) time.Duration {
	return p.jittered(p.Base(reconsumeTimes), u)
}

// jittered is delay d spread by the jitter (u: a uniform draw from
// [0, 1)), at least 1 ms, and for EXPONENTIAL never past Max.
func (p RetryPolicy) jittered(d time.Duration, u float64) time.Duration {
	if p.Jitter == 0 {
		return d
	}
	d = time.Duration(float64(d) * (1 + p.Jitter*(2*u-1)))
	if p.Type == RetryExponential {
		d = min(d, p.Max)
	}
	return max(d, time.Millisecond)
}

// RetryPolicy is the group's retry policy: its groupRetryPolicy parsed, or
// the default when it is unset or does not parse (PutGroup refuses such a
// policy; one stored by an older broker is read as the default).
func (c SubscriptionGroupConfig) RetryPolicy() RetryPolicy {
	p, err := ParseRetryPolicy(c.GroupRetryPolicy)
	if err != nil {
		p, _ = ParseRetryPolicy(nil)
	}
	return p
}

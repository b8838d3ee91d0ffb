package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/wheelmq/wheelmq/storage/meta"
)

// TestGroupCreateRetryFlags: --retry and --retry-jitter become RocketMQ's
// groupRetryPolicy object, which the broker's own parser reads back to the
// same delays; malformed flags are refused naming what to write.
func TestGroupCreateRetryFlags(t *testing.T) {
	body, err := groupConfigBody("billing", groupCreateFlags{retryMax: 8, retryQueues: 1, retry: "exponential:1s,10m,2", jitter: 0.1})
	if err != nil {
		t.Fatal(err)
	}
	var cfg meta.SubscriptionGroupConfig
	if err := json.Unmarshal(body, &cfg); err != nil {
		t.Fatal(err)
	}
	p, err := meta.ParseRetryPolicy(cfg.GroupRetryPolicy)
	if err != nil || p.Type != meta.RetryExponential || p.Base(0).String() != "1s" || p.Base(3).String() != "8s" ||
		p.Base(20).String() != "10m0s" || p.Jitter != 0.1 || cfg.RetryMaxTimes != 8 || cfg.GroupName != "billing" {
		t.Fatalf("exponential: %s -> %+v %v", cfg.GroupRetryPolicy, p, err)
	}
	body, err = groupConfigBody("billing", groupCreateFlags{retry: "customized:500ms,1s,5s"})
	if err != nil {
		t.Fatal(err)
	}
	_ = json.Unmarshal(body, &cfg)
	if p, err := meta.ParseRetryPolicy(cfg.GroupRetryPolicy); err != nil || p.Base(0).String() != "5s" {
		t.Fatalf("customized: %s -> %+v %v", cfg.GroupRetryPolicy, p, err)
	}
	body, _ = groupConfigBody("billing", groupCreateFlags{})
	_ = json.Unmarshal(body, &cfg)
	if p, err := meta.ParseRetryPolicy(cfg.GroupRetryPolicy); err != nil || !p.Default {
		t.Fatalf("no --retry: %s -> %+v %v", cfg.GroupRetryPolicy, p, err)
	}
	for spec, want := range map[string]string{
		"linear:1s":             "exponential or customized",
		"exponential:1s,2s":     "INITIAL,MAX,MULTIPLIER",
		"exponential:1s,x,2":    "durations",
		"customized:1s,soon":    "not a duration",
		"exponential:5s,1s,2":   "max must be from initial",
		"customized":            "want exponential:",
		"customized:1s,-5s,10s": "next[1]",
	} {
		if _, err := groupConfigBody("g", groupCreateFlags{retry: spec}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("--retry %s: %v, want an error naming %q", spec, err, want)
		}
	}
	if _, err := groupConfigBody("g", groupCreateFlags{jitter: 1.5}); err == nil || !strings.Contains(err.Error(), "jitter") {
		t.Errorf("--retry-jitter 1.5: %v", err)
	}
}

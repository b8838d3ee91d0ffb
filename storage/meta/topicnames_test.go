package meta

import (
	"errors"
	"strings"
	"testing"
)

func TestValidateTopic(t *testing.T) {
	tests := []struct {
		name string
		ok   bool
		rule TopicRule
	}{
		{"TopicTest", true, ""},
		{"a", true, ""},
		{"%RETRY%group-1", true, ""},
		{"with|pipe_and-dash%", true, ""},
		{"", false, TopicRuleBlank},
		{"   ", false, TopicRuleBlank},
		{"has space", false, TopicRuleChars},
		{"dot.topic", false, TopicRuleChars},
		{"slash/topic", false, TopicRuleChars},
		{"tópico", false, TopicRuleChars},
		{"tab\t", false, TopicRuleChars},
		{strings.Repeat("a", 127), true, ""},
		{strings.Repeat("a", 128), false, TopicRuleLength},
		{"%RETRY%" + strings.Repeat("g", 248), true, ""}, // 255
		{"%RETRY%" + strings.Repeat("g", 249), false, TopicRuleLength},
		{"%DLQ%" + strings.Repeat("g", 250), true, ""}, // 255
		{"%DLQ%" + strings.Repeat("g", 251), false, TopicRuleLength},
		{"x%RETRY%" + strings.Repeat("g", 130), false, TopicRuleLength}, // prefix must lead
	}
	for _, tt := range tests {
		label := tt.name
		if len(label) > 20 {
			label = label[:20] + "..."
		}
		t.Run(label, func(t *testing.T) {
			err := ValidateTopic(tt.name)
			if (err == nil) != tt.ok {
				t.Fatalf("ValidateTopic(len %d) = %v, want ok=%v", len(tt.name), err, tt.ok)
			}
			if err != nil && !errors.Is(err, ErrInvalidTopic) {
				t.Fatalf("error %v does not wrap ErrInvalidTopic", err)
			}
			var te *TopicNameError
			if err != nil && (!errors.As(err, &te) || te.Rule != tt.rule || te.Name != tt.name) {
				t.Fatalf("error %v: rule %+v, want %s", err, te, tt.rule)
			}
		})
	}
}

func TestTopicClasses(t *testing.T) {
	tests := []struct {
		name            string
		system, noWrite bool
	}{
		{"TopicTest", false, false},
		{"TBW102", true, false},
		{"SCHEDULE_TOPIC_XXXX", true, true},
		{"RMQ_SYS_TRANS_HALF_TOPIC", true, true},
		{"RMQ_SYS_TRANS_OP_HALF_TOPIC", true, true},
		{"TRANS_CHECK_MAX_TIME_TOPIC", true, true},
		{"SELF_TEST_TOPIC", true, true},
		{"OFFSET_MOVED_EVENT", true, true},
		{"RMQ_SYS_TRACE_TOPIC", true, false},
		{"BenchmarkTest", true, false},
		{"rmq_sys_wheel_timer", true, true},
		{"rmq_sys_anything", true, true},
		{"RMQ_SYS_OTHER", false, false}, // the prefix is lower case
		{"%RETRY%G", false, false},
	}
	for _, tt := range tests {
		if got := IsSystemTopic(tt.name); got != tt.system {
			t.Errorf("IsSystemTopic(%q) = %v", tt.name, got)
		}
		if got := IsClientWriteForbidden(tt.name); got != tt.noWrite {
			t.Errorf("IsClientWriteForbidden(%q) = %v", tt.name, got)
		}
	}
}

func TestRetryAndDLQTopics(t *testing.T) {
	if got := RetryTopic("G1"); got != "%RETRY%G1" || !IsRetryTopic(got) || IsDLQTopic(got) {
		t.Errorf("RetryTopic = %q", got)
	}
	if got := DLQTopic("G1"); got != "%DLQ%G1" || !IsDLQTopic(got) || IsRetryTopic(got) {
		t.Errorf("DLQTopic = %q", got)
	}
}

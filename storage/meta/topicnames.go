package meta

import (
	"fmt"
	"slices"
	"strings"
)

// Well-known topic names and prefixes (RocketMQ TopicValidator / MixAll).
const (
	// TopicAutoCreate is the template topic producers fall back to (TBW102).
	TopicAutoCreate = "TBW102"
	// TopicSchedule holds classic delay-level messages.
	TopicSchedule = "SCHEDULE_TOPIC_XXXX"
	// TopicBenchmark is RocketMQ's benchmark topic.
	TopicBenchmark = "BenchmarkTest"
	// TopicTransHalf holds half (prepared) transactional messages.
	TopicTransHalf = "RMQ_SYS_TRANS_HALF_TOPIC"
	// TopicTransOpHalf holds transaction operation records.
	TopicTransOpHalf = "RMQ_SYS_TRANS_OP_HALF_TOPIC"
	// TopicTransCheckMaxTime holds transactions that exceeded their checks.
	TopicTransCheckMaxTime = "TRANS_CHECK_MAX_TIME_TOPIC"
	// TopicTrace is the default message trace topic.
	TopicTrace = "RMQ_SYS_TRACE_TOPIC"
	// TopicSelfTest is the broker's self-test topic.
	TopicSelfTest = "SELF_TEST_TOPIC"
	// TopicOffsetMoved carries offset-moved events.
	TopicOffsetMoved = "OFFSET_MOVED_EVENT"
	// TopicCheckpoint is RocketMQ's offset checkpoint topic.
	TopicCheckpoint = "CHECKPOINT_TOPIC"
	// TopicWheelTimer is the timer store's input topic (RIP-43).
	TopicWheelTimer = "rmq_sys_wheel_timer"
	// TopicWheelMQMeta holds wheelmq's metadata system records (consumer
	// offsets, topic and group changes; package metarec), replicated with
	// the CommitLog. It is never a configured topic.
	TopicWheelMQMeta = "rmq_sys_wheelmq_meta"

	// SystemTopicPrefix starts every internal rmq_sys_ topic.
	SystemTopicPrefix = "rmq_sys_"
	// RetryGroupTopicPrefix starts a consumer group's retry topic.
	RetryGroupTopicPrefix = "%RETRY%"
	// DLQGroupTopicPrefix starts a consumer group's dead-letter topic.
	DLQGroupTopicPrefix = "%DLQ%"

	// MaxTopicLen is the longest ordinary topic name.
	MaxTopicLen = 127
	// MaxRetryTopicLen is the longest %RETRY% or %DLQ% topic name.
	MaxRetryTopicLen = 255
)

var (
	systemTopics = map[string]bool{
		TopicAutoCreate: true, TopicSchedule: true, TopicBenchmark: true, TopicTransHalf: true,
		TopicTrace: true, TopicTransOpHalf: true, TopicTransCheckMaxTime: true, TopicSelfTest: true,
		TopicOffsetMoved: true, TopicCheckpoint: true,
	}
	writeForbiddenTopics = map[string]bool{
		TopicSchedule: true, TopicTransHalf: true, TopicTransOpHalf: true,
		TopicTransCheckMaxTime: true, TopicSelfTest: true, TopicOffsetMoved: true,
	}
)

// TopicRule names the naming rule a topic breaks.
type TopicRule string

// The topic naming rules checked by ValidateTopic.
const (
	// TopicRuleBlank: the name is empty or only white space.
	TopicRuleBlank TopicRule = "topic-blank"
	// TopicRuleChars: the name has a character outside [%|a-zA-Z0-9_-].
	TopicRuleChars TopicRule = "topic-chars"
	// TopicRuleLength: the name is longer than 127 bytes (255 for %RETRY%
	// and %DLQ% topics).
	TopicRuleLength TopicRule = "topic-length"
)

// TopicNameError is the error of ValidateTopic: which rule the name breaks.
// It wraps ErrInvalidTopic.
type TopicNameError struct {
	// Name is the topic name checked.
	Name string
	// Rule is the rule it breaks.
	Rule TopicRule
	msg  string
}

// Error describes the broken rule.
func (e *TopicNameError) Error() string { return e.msg + ": " + ErrInvalidTopic.Error() }

// Unwrap returns ErrInvalidTopic.
func (e *TopicNameError) Unwrap() error { return ErrInvalidTopic }

// ValidateTopic checks a topic name the way a RocketMQ broker does: not
// blank, only characters from [%|a-zA-Z0-9_-], at most 127 bytes (255 for
// names starting with %RETRY% or %DLQ%). Errors are *TopicNameError and wrap
// ErrInvalidTopic.
func ValidateTopic(name string) error {
	if strings.TrimSpace(name) == "" {
		return &TopicNameError{Name: name, Rule: TopicRuleBlank, msg: fmt.Sprintf("topic %q is blank", name)}
	}
	for i := 0; i < len(name); i++ {
		if !validTopicChar(name[i]) {
			return &TopicNameError{Name: name, Rule: TopicRuleChars, msg: fmt.Sprintf(
				"topic %q contains illegal character %q at %d, allowing only ^[%%|a-zA-Z0-9_-]+$", name, name[i], i)}
		}
	}
	limit := MaxTopicLen
	if IsRetryTopic(name) || IsDLQTopic(name) {
		limit = MaxRetryTopicLen
	}
	if len(name) > limit {
		return &TopicNameError{Name: name, Rule: TopicRuleLength, msg: fmt.Sprintf(
			"topic of %d characters is longer than %d", len(name), limit)}
	}
	return nil
}

func validTopicChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		c == '%' || c == '|' || c == '_' || c == '-'
}

// IsSystemTopic reports whether name is one of RocketMQ's system topics or
// starts with SystemTopicPrefix. (A Java broker also counts its broker-name
// and cluster-name topics; that needs configuration this function lacks.)
func IsSystemTopic(name string) bool {
	return systemTopics[name] || strings.HasPrefix(name, SystemTopicPrefix)
}

// SystemTopics returns RocketMQ's fixed system topics, sorted (a broker
// adds its cluster, broker and reply topics: see DefaultTopics).
func SystemTopics() []string {
	out := make([]string, 0, len(systemTopics))
	for name := range systemTopics {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// IsClientWriteForbidden reports whether producers may not send to name:
// SCHEDULE_TOPIC_XXXX, the transaction topics, SELF_TEST_TOPIC,
// OFFSET_MOVED_EVENT and every rmq_sys_ topic (a Java broker answers
// NO_PERMISSION).
func IsClientWriteForbidden(name string) bool {
	return writeForbiddenTopics[name] || strings.HasPrefix(name, SystemTopicPrefix)
}

// ReplyTopic returns the topic request/reply responders of a cluster send
// their replies to: "<cluster>_REPLY_TOPIC" (RocketMQ's REPLY_TOPIC_POSTFIX).
func ReplyTopic(cluster string) string { return cluster + "_REPLY_TOPIC" }

// RetryTopic returns the retry topic of a consumer group: "%RETRY%<group>".
func RetryTopic(group string) string { return RetryGroupTopicPrefix + group }

// DLQTopic returns the dead-letter topic of a consumer group: "%DLQ%<group>".
func DLQTopic(group string) string { return DLQGroupTopicPrefix + group }

// IsRetryTopic reports whether name is a %RETRY% topic.
func IsRetryTopic(name string) bool { return strings.HasPrefix(name, RetryGroupTopicPrefix) }

// IsDLQTopic reports whether name is a %DLQ% topic.
func IsDLQTopic(name string) bool { return strings.HasPrefix(name, DLQGroupTopicPrefix) }

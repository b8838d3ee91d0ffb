package producer

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/wheelmq/wheelmq/storage/message"
	"github.com/wheelmq/wheelmq/storage/meta"
)

// Rule names the check a message failed before anything was sent.
type Rule string

// The rules checked before a send. Topic rules are storage/meta's.
const (
	// RuleTopicBlank: the topic is empty or white space.
	RuleTopicBlank = Rule(meta.TopicRuleBlank)
	// RuleTopicChars: the topic has a character outside [%|a-zA-Z0-9_-].
	RuleTopicChars = Rule(meta.TopicRuleChars)
	// RuleTopicLength: the topic is longer than 127 bytes (255 for %RETRY%
	// and %DLQ% topics).
	RuleTopicLength = Rule(meta.TopicRuleLength)
	// RuleTopicForbidden: producers may not send to this system topic
	// (TBW102, SCHEDULE_TOPIC_XXXX, the transaction topics, rmq_sys_*, ...).
	RuleTopicForbidden Rule = "topic-forbidden"
	// RuleBodyEmpty: the body is empty.
	RuleBodyEmpty Rule = "body-empty"
	// RuleBodyTooLarge: the body is larger than MaxMessageSize.
	RuleBodyTooLarge Rule = "body-too-large"
	// RuleProperty: a property has an empty key or a key or value with the
	// separator bytes 0x01 or 0x02.
	RuleProperty Rule = "property-invalid"
	// RulePropertiesTooLarge: the encoded properties exceed 32767 bytes.
	RulePropertiesTooLarge Rule = "properties-too-large"
	// RuleTimer: a delivery time or delay is not a non-negative integer.
	RuleTimer Rule = "timer-invalid"
	// RuleBatchEmpty: a batch without messages.
	RuleBatchEmpty Rule = "batch-empty"
	// RuleBatchTopics: the messages of a batch name different topics.
	RuleBatchTopics Rule = "batch-mixed-topics"
	// RuleBatchTimer: a batch message is a timer or delay message (the broker
	// refuses them in batches).
	RuleBatchTimer Rule = "batch-timer"
	// RuleBatchTooLarge: the encoded batch exceeds MaxMessageSize.
	RuleBatchTooLarge Rule = "batch-too-large"
)

// ErrInvalidMessage matches every *ValidationError with errors.Is.
var ErrInvalidMessage = errors.New("producer: invalid message")

// ValidationError reports a message refused before anything was sent.
type ValidationError struct {
	// Rule is the check that failed.
	Rule Rule
	// Topic is the message's topic.
	Topic string
	// Detail says what was wrong.
	Detail string
}

// Error names the rule and the detail.
func (e *ValidationError) Error() string {
	return fmt.Sprintf("producer: message to %q refused (%s): %s", e.Topic, e.Rule, e.Detail)
}

// Is matches ErrInvalidMessage.
func (e *ValidationError) Is(target error) bool { return target == ErrInvalidMessage }

// maxPropertiesSize is RocketMQ's limit on encoded properties.
const maxPropertiesSize = 32767

// validateTopic checks a topic name and that producers may write it.
func validateTopic(topic string) error {
	if err := meta.ValidateTopic(topic); err != nil {
		var te *meta.TopicNameError
		rule := RuleTopicChars
		if errors.As(err, &te) {
			rule = Rule(te.Rule)
		}
		return &ValidationError{Rule: rule, Topic: topic, Detail: err.Error()}
	}
	if topic == meta.TopicAutoCreate || meta.IsClientWriteForbidden(topic) {
		return &ValidationError{Rule: RuleTopicForbidden, Topic: topic,
			Detail: fmt.Sprintf("topic %s is a system topic producers may not send to", topic)}
	}
	return nil
}

// validateMessage checks one message: topic, body size, properties and
// timer values.
func validateMessage(m *Message, maxSize int) error {
	if m == nil {
		return &ValidationError{Rule: RuleBodyEmpty, Detail: "nil message"}
	}
	if err := validateTopic(m.Topic); err != nil {
		return err
	}
	if len(m.Body) == 0 {
		return &ValidationError{Rule: RuleBodyEmpty, Topic: m.Topic, Detail: "the message body is empty"}
	}
	if len(m.Body) > maxSize {
		return &ValidationError{Rule: RuleBodyTooLarge, Topic: m.Topic,
			Detail: fmt.Sprintf("body of %d bytes exceeds the limit of %d", len(m.Body), maxSize)}
	}
	size := 0
	for i := range m.numProps() {
		p := m.propAt(i)
		if p.key == "" || strings.ContainsAny(p.key, "\x01\x02") || strings.ContainsAny(p.val, "\x01\x02") {
			return &ValidationError{Rule: RuleProperty, Topic: m.Topic,
				Detail: fmt.Sprintf("property %q: keys must be non-empty and neither key nor value may contain 0x01 or 0x02", p.key)}
		}
		size += len(p.key) + p.valueLen() + 2
	}
	if size > maxPropertiesSize-reservedPropertiesSize {
		return &ValidationError{Rule: RulePropertiesTooLarge, Topic: m.Topic,
			Detail: fmt.Sprintf("properties of %d bytes exceed the limit of %d (with room for the producer's own)",
				size, maxPropertiesSize-reservedPropertiesSize)}
	}
	for _, k := range timerProps {
		p := m.find(k)
		if p == nil {
			continue
		}
		n, err := p.num, error(nil)
		if !p.isNum {
			n, err = strconv.ParseInt(p.val, 10, 64)
		}
		if err != nil || n < 0 {
			return &ValidationError{Rule: RuleTimer, Topic: m.Topic,
				Detail: fmt.Sprintf("%s=%q must be a non-negative integer", k, p.value())}
		}
	}
	return nil
}

// reservedPropertiesSize is room kept for UNIQ_KEY and WAIT, which the
// producer adds.
const reservedPropertiesSize = len(message.PropUniqKey) + 56 + len(message.PropWait) + 4 + 4

// validateBatch checks the messages of a batch: at least one, one topic,
// each valid, none a timer message.
func validateBatch(msgs []*Message, maxSize int) error {
	if len(msgs) == 0 {
		return &ValidationError{Rule: RuleBatchEmpty, Detail: "a batch needs at least one message"}
	}
	for i, m := range msgs {
		if err := validateMessage(m, maxSize); err != nil {
			var ve *ValidationError
			if errors.As(err, &ve) {
				ve.Detail = fmt.Sprintf("batch message %d: %s", i, ve.Detail)
			}
			return err
		}
		if m.Topic != msgs[0].Topic {
			return &ValidationError{Rule: RuleBatchTopics, Topic: msgs[0].Topic,
				Detail: fmt.Sprintf("batch message %d is for %q; all must share one topic", i, m.Topic)}
		}
		if m.IsTimer() {
			return &ValidationError{Rule: RuleBatchTimer, Topic: m.Topic,
				Detail: fmt.Sprintf("batch message %d has a delivery time or delay; send timer messages one by one", i)}
		}
	}
	return nil
}

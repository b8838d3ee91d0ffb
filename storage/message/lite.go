package message

import (
	"fmt"
	"regexp"
)

// PropLiteTopic is a lite message's lite topic (RocketMQ 5.5, RIP-83:
// MessageConst.PROPERTY_LITE_TOPIC; the v5 protocol's
// SystemProperties.lite_topic): the name of the ordered sub-queue of its
// LITE parent topic the message belongs to.
const PropLiteTopic = "__LITE_TOPIC"

// MaxLiteTopicLen bounds a lite topic's name.
const MaxLiteTopicLen = 128

var liteTopicChars = regexp.MustCompile(`^[%|a-zA-Z0-9_-]+$`)

// ValidateLiteTopic refuses a lite topic name that is empty, longer than
// MaxLiteTopicLen, or outside a topic name's characters [%|a-zA-Z0-9_-].
func ValidateLiteTopic(name string) error {
	if name == "" || len(name) > MaxLiteTopicLen || !liteTopicChars.MatchString(name) {
		return fmt.Errorf("lite topic %q is empty, longer than %d or not made of [%%|a-zA-Z0-9_-]", name, MaxLiteTopicLen)
	}
	return nil
}

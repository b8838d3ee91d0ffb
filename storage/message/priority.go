package message

import (
	"fmt"
	"strconv"
)

// PropPriority is a priority message's priority (RocketMQ 5.4, RIP-80:
// MessageConst.PROPERTY_PRIORITY; the v5 protocol's SystemProperties
// .priority), a non-negative decimal integer, higher first.
const PropPriority = "PRIORITY"

// MaxPriority bounds a priority (a message's queue is min(priority,
// queues-1), so larger values add nothing).
const MaxPriority = 1 << 20

// ParsePriority reads a PRIORITY property's value.
func ParsePriority(v string) (int32, error) {
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil || n < 0 || n > MaxPriority {
		return 0, fmt.Errorf("priority %q is not an integer in [0, %d]", v, MaxPriority)
	}
	return int32(n), nil
}

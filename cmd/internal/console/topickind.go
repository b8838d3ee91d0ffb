package console

import "strings"

// topicKind labels a system topic on the topics list: a group's retry
// topic, a group's dead-letter queue, a timer or POP topic of the broker,
// or one of RocketMQ's other built-in topics.
func topicKind(name string) string {
	switch {
	case strings.HasPrefix(name, "%RETRY%"):
		return "retry"
	case strings.HasPrefix(name, "%DLQ%"):
		return "dead letters"
	case name == "rmq_sys_wheel_timer", name == "rmq_sys_wheel_roll", name == "rmq_sys_wheel_schedule_stop", name == "SCHEDULE_TOPIC_XXXX":
		return "timer"
	case strings.HasPrefix(name, "rmq_sys_wheelmq_pop"), strings.HasPrefix(name, "rmq_sys_REVIVE_LOG"):
		return "pop"
	}
	return "system"
}

// topicKindClass is the CSS class of a kind's label.
func topicKindClass(name string) string {
	switch topicKind(name) {
	case "retry":
		return "system retry"
	case "dead letters":
		return "system dlq"
	}
	return "system"
}

// The topics list's labels, beside the template functions of svg.go.
func init() {
	funcs["topickind"] = topicKind
	funcs["topickindclass"] = topicKindClass
}

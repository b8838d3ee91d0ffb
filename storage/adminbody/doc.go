// Package adminbody encodes and decodes the bodies of RocketMQ's admin
// requests (the ones mqadmin, rocketmq-dashboard and the Go admin API
// send) in the shapes RocketMQ's Java side writes with fastjson 1.2.x:
// bean properties in alphabetical order, nulls omitted, doubles with a
// fraction ("0.0"), no white space.
//
// Maps keyed by a MessageQueue (ConsumeStats, TopicStatsTable,
// ResetOffsetBody) are written as fastjson writes them, with the key object
// itself in key position, which is not standard JSON:
//
//	{"consumeTps":0.0,"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:{"brokerOffset":10,...},...}}
//
// fastjson reads that form back, and so does the Go client's reset-offset
// parser (which needs exactly this compact form); Java admin tools also
// accept a standard JSON key holding the queue's JSON text. Entries are
// written sorted by topic, broker name and queue id so that the output is
// deterministic. DecodeQueueMap reads all those forms.
package adminbody

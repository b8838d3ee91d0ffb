package main

import (
	"regexp"
	"testing"

	"github.com/wheelmq/wheelmq/cmd/internal/process"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
)

// TestSendOverGRPCLine: a send through the RocketMQ 5 Go SDK prints its
// message id and offset, and "-" where the v5 receipt names nothing (no
// offsetMsgId, no queue) instead of empty fields.
func TestSendOverGRPCLine(t *testing.T) {
	t.Parallel()
	n := startNode(t, processtest.Options{MutateNode: func(c *process.Config) { c.GRPC.Listen = "127.0.0.1:0" }})
	topic := processtest.Unique("grpcsend")
	processtest.CreateTopic(t, n, topic, 2)
	out := mustRun(t, "send", "--namesrv", n.NamesrvAddr(), "--client", "grpc", "--grpc-endpoint", n.GRPCAddr(),
		"--topic", topic, "--body", "hello")
	if !regexp.MustCompile(`sent 1/1  msgId [0-9A-F]{20,}  offsetMsgId -  queue -  offset \d+\n`).MatchString(out) {
		t.Fatalf("send line over gRPC: %q", out)
	}
}

package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/cmd/internal/admin"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
)

// TestTopicCreateMessageType: topic create --message-type FIFO stores
// message.type, which GET_ALL_TOPIC_CONFIG then answers; an unknown type is
// a usage error and a refused attribute fails on the broker.
func TestTopicCreateMessageType(t *testing.T) {
	n := startNode(t, processtest.Options{})
	ns := "--namesrv=" + n.NamesrvAddr()
	topic := processtest.Unique("wheelctl_fifo")
	out := mustRun(t, "topic", "create", topic, "--queues", "2", "--message-type", "fifo", ns)
	if !strings.Contains(out, "attributes +message.type=FIFO") {
		t.Fatalf("create: %s", out)
	}
	s := &admin.Session{Timeout: 5 * time.Second}
	defer s.Close()
	cfgs, err := s.TopicConfigs(context.Background(), n.BrokerAddr())
	if err != nil || cfgs[topic].Attributes["message.type"] != "FIFO" {
		t.Fatalf("topic configs: %+v %v", cfgs[topic], err)
	}
	if _, _, code := runCLI(t, "topic", "create", topic, "--message-type", "ORDERED", ns); code == 0 {
		t.Fatal("an unknown message type was taken")
	}
	if out, _, code := runCLI(t, "topic", "create", topic, "--attributes", "+queue.type=BatchCQ", ns); code == 0 ||
		!strings.Contains(out, "unchangeable attribute") {
		t.Fatalf("an unchangeable attribute: exit %d: %s", code, out)
	}
}

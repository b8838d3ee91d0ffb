package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/cmd/internal/admin"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
)

// TestTopicCreateLite: topic create --message-type LITE --lite-expiration
// 90m makes a LITE topic with lite.topic.expiration=90 (minutes); a TTL
// that is not whole minutes, or without LITE, is a usage error.
func TestTopicCreateLite(t *testing.T) {
	n := startNode(t, processtest.Options{})
	ns := "--namesrv=" + n.NamesrvAddr()
	topic := processtest.Unique("wheelctl_lite")
	out := mustRun(t, "topic", "create", topic, "--queues", "2", "--message-type", "lite", "--lite-expiration", "90m", ns)
	if !strings.Contains(out, "+message.type=LITE,+lite.topic.expiration=90") {
		t.Fatalf("create: %s", out)
	}
	s := &admin.Session{Timeout: 5 * time.Second}
	defer s.Close()
	cfgs, err := s.TopicConfigs(context.Background(), n.BrokerAddr())
	if err != nil || cfgs[topic].Attributes["message.type"] != "LITE" || cfgs[topic].Attributes["lite.topic.expiration"] != "90" {
		t.Fatalf("topic configs: %+v %v", cfgs[topic], err)
	}
	for _, args := range [][]string{
		{"--message-type", "LITE", "--lite-expiration", "90s"},
		{"--message-type", "NORMAL", "--lite-expiration", "5m"},
	} {
		if _, _, code := runCLI(t, append([]string{"topic", "create", processtest.Unique("wheelctl_lite_bad"), ns}, args...)...); code != 2 {
			t.Fatalf("%v: exit %d, want 2 (usage)", args, code)
		}
	}
}

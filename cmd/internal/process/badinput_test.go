package process_test

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// closedByServer reports whether the server closed conn within a second.
func closedByServer(conn net.Conn) bool {
	_ = conn.SetReadDeadline(time.Now().Add(2 * time.Second))
	buf := make([]byte, 1024)
	for {
		_, err := conn.Read(buf)
		if err != nil {
			ne, ok := err.(net.Error)
			return !(ok && ne.Timeout())
		}
	}
}

// TestBadInputIsContained throws malformed frames and illegal messages at
// the broker: each gets its documented reaction and a producer on another
// connection keeps working throughout.
func TestBadInputIsContained(t *testing.T) {
	n := processtest.Start(t, processtest.Options{})
	topic := processtest.Unique("bad")
	processtest.CreateTopic(t, n, topic, 2)
	p := processtest.Producer(t, n.NamesrvAddr())
	ctx := context.Background()
	sendOK := func(step string) {
		t.Helper()
		if _, err := p.SendSync(ctx, primitive.NewMessage(topic, []byte("still-ok-"+step))); err != nil {
			t.Fatalf("healthy producer failed after %s: %v", step, err)
		}
	}
	sendOK("start")

	frames := map[string][]byte{
		"garbage":         []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"),
		"lying length":    {0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 1},
		"negative length": {0xff, 0xff, 0xff, 0xf0, 0, 0, 0, 0},
		"truncated header": func() []byte { // header length says 100, frame holds 10
			b := make([]byte, 4+4+10)
			binary.BigEndian.PutUint32(b, 14)
			binary.BigEndian.PutUint32(b[4:], 100)
			return b
		}(),
		"bad json header": func() []byte {
			h := []byte(`{"code":10,"opaque":`)
			b := make([]byte, 8, 8+len(h))
			binary.BigEndian.PutUint32(b, uint32(4+len(h)))
			binary.BigEndian.PutUint32(b[4:], uint32(len(h)))
			return append(b, h...)
		}(),
		"unknown serialize type": func() []byte {
			b := make([]byte, 8+2)
			binary.BigEndian.PutUint32(b, 6)
			binary.BigEndian.PutUint32(b[4:], 0x07000002)
			return b
		}(),
	}
	for name, frame := range frames {
		t.Run(name, func(t *testing.T) {
			conn, err := net.Dial("tcp", n.BrokerAddr())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if _, err := conn.Write(frame); err != nil {
				t.Fatal(err)
			}
			if !closedByServer(conn) {
				t.Fatalf("server kept the connection open after %s", name)
			}
			sendOK(name)
		})
	}

	t.Run("unknown request code", func(t *testing.T) {
		resp := processtest.Invoke(t, n.BrokerAddr(), remoting.NewRequest(9999, nil, nil))
		if resp.Code != remoting.RequestCodeNotSupported || !strings.Contains(resp.Remark, "9999") {
			t.Fatalf("got code %d remark %q", resp.Code, resp.Remark)
		}
		sendOK("unknown code")
	})

	t.Run("oversize message", func(t *testing.T) {
		big := make([]byte, 4<<20+1024)
		_, _ = rand.Read(big) // incompressible: the client compresses bodies over 4 KiB
		m := primitive.NewMessage(topic, big)
		_, err := p.SendSync(ctx, m)
		if err == nil || !strings.Contains(err.Error(), "CODE: 13") {
			t.Fatalf("oversize send: want MESSAGE_ILLEGAL (13), got %v", err)
		}
		sendOK("oversize")
	})

	t.Run("bad topic names", func(t *testing.T) {
		for _, bad := range []string{"has space", "slash/topic", strings.Repeat("x", 128), "star*"} {
			_, err := p.SendSync(ctx, primitive.NewMessage(bad, []byte("x")))
			if err == nil {
				t.Fatalf("send to %q succeeded", bad)
			}
		}
		// The broker itself answers INVALID_PARAMETER for a bad name.
		resp := processtest.Invoke(t, n.BrokerAddr(), remoting.NewRequest(remoting.SendMessage, map[string]string{
			"producerGroup": "g", "topic": "bad topic", "defaultTopic": "TBW102", "defaultTopicQueueNums": "4",
			"queueId": "0", "sysFlag": "0", "bornTimestamp": "1", "flag": "0", "properties": "",
		}, []byte("x")))
		if resp.Code != remoting.InvalidParameter {
			t.Fatalf("bad topic: got code %d %q, want %d", resp.Code, resp.Remark, remoting.InvalidParameter)
		}
		sendOK("bad topic")
	})

	t.Run("empty body and system topic", func(t *testing.T) {
		base := map[string]string{
			"producerGroup": "g", "topic": topic, "defaultTopic": "TBW102", "defaultTopicQueueNums": "4",
			"queueId": "0", "sysFlag": "0", "bornTimestamp": "1", "flag": "0", "properties": "",
		}
		if resp := processtest.Invoke(t, n.BrokerAddr(), remoting.NewRequest(remoting.SendMessage, base, nil)); resp.Code != remoting.MessageIllegal {
			t.Fatalf("empty body: got code %d %q", resp.Code, resp.Remark)
		}
		sys := map[string]string{}
		for k, v := range base {
			sys[k] = v
		}
		sys["topic"] = "SCHEDULE_TOPIC_XXXX"
		if resp := processtest.Invoke(t, n.BrokerAddr(), remoting.NewRequest(remoting.SendMessage, sys, []byte("x"))); resp.Code != remoting.NoPermission {
			t.Fatalf("system topic: got code %d %q", resp.Code, resp.Remark)
		}
		missing := map[string]string{"topic": topic}
		if resp := processtest.Invoke(t, n.BrokerAddr(), remoting.NewRequest(remoting.SendMessage, missing, []byte("x"))); resp.Code != remoting.InvalidParameter {
			t.Fatalf("missing fields: got code %d %q", resp.Code, resp.Remark)
		}
		bad := map[string]string{}
		for k, v := range base {
			bad[k] = v
		}
		bad["queueId"] = "77"
		if resp := processtest.Invoke(t, n.BrokerAddr(), remoting.NewRequest(remoting.SendMessage, bad, []byte("x"))); resp.Code != remoting.InvalidParameter {
			t.Fatalf("bad queue id: got code %d %q", resp.Code, resp.Remark)
		}
		sendOK("illegal sends")
	})

	t.Run("binary header request", func(t *testing.T) {
		req := remoting.NewRequest(remoting.GetMaxOffset, map[string]string{"topic": topic, "queueId": "0"}, nil)
		req.Serialize = remoting.SerializeRocketMQ
		resp := processtest.Invoke(t, n.BrokerAddr(), req)
		if resp.Code != remoting.Success || resp.Serialize != remoting.SerializeRocketMQ || resp.Field("offset") == "" {
			t.Fatalf("binary request: code %d serialize %v offset %q", resp.Code, resp.Serialize, resp.Field("offset"))
		}
	})
	_ = fmt.Sprint
}

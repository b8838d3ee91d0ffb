package process_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/cmd/internal/process"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/netloop"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// BenchmarkTLSSend compares SEND_MESSAGE over TLS with plaintext against
// one in-process broker whose port takes both (permissive, async flush),
// 256-byte bodies, in the same run: one request at a time (sync) and a
// window of 256 in flight on one connection (async). Each sub-benchmark
// reports msgs/s; the parent logs the TLS/plaintext ratios.
//
//	go test ./cmd/internal/process -run '^$' -bench TLSSend
func BenchmarkTLSSend(b *testing.B) {
	n := startBenchTLSNode(b)
	topic := "tls_bench"
	plainC := benchDial(b, n.BrokerAddr(), nil)
	tlsC := benchDial(b, n.BrokerAddr(), insecure())
	createBenchTopic(b, plainC, topic)
	body := bytes.Repeat([]byte("w"), 256)
	rates := map[string]float64{}
	for _, mode := range []string{"sync", "async"} {
		for _, tr := range []struct {
			name string
			c    *remoting.Client
		}{{"plain", plainC}, {"tls", tlsC}} {
			name := mode + "/" + tr.name
			b.Run(name, func(b *testing.B) {
				b.ReportAllocs()
				if mode == "sync" {
					benchSendSync(b, tr.c, topic, body)
				} else {
					benchSendWindow(b, tr.c, topic, body, asyncWindow)
				}
				r := float64(b.N) / b.Elapsed().Seconds()
				b.ReportMetric(r, "msgs/s")
				rates[name] = r
			})
		}
		if p := rates[mode+"/plain"]; p > 0 {
			b.Logf("%s: tls %.0f msgs/s, plain %.0f msgs/s, ratio %.2fx", mode, rates[mode+"/tls"], p, rates[mode+"/tls"]/p)
		}
	}
}

func startBenchTLSNode(b *testing.B) *process.Node {
	b.Helper()
	return startTLSNode(b, process.TLSConfig{Mode: netloop.TLSPermissive})
}

func benchDial(b *testing.B, addr string, cfg *tls.Config) *remoting.Client {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := remoting.Dial(ctx, addr, remoting.ClientOptions{TLS: cfg})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	return c
}

func createBenchTopic(b *testing.B, c *remoting.Client, topic string) {
	b.Helper()
	resp, err := c.Invoke(context.Background(), remoting.NewRequest(remoting.UpdateAndCreateTopic, map[string]string{
		"topic": topic, "readQueueNums": "8", "writeQueueNums": "8", "perm": "6", "topicFilterType": "SINGLE_TAG",
	}, nil))
	if err != nil || resp.Code != remoting.Success {
		b.Fatalf("create topic: %v %+v", err, resp)
	}
}

func benchSendSync(b *testing.B, c *remoting.Client, topic string, body []byte) {
	ctx := context.Background()
	q := int32(0)
	for b.Loop() {
		resp, err := c.Invoke(ctx, processtest.SendRequest(topic, q, body, nil))
		if err != nil || resp.Code != remoting.Success {
			b.Fatalf("send: %v %+v", err, resp)
		}
		q = (q + 1) % 8
	}
}

func benchSendWindow(b *testing.B, c *remoting.Client, topic string, body []byte, window int) {
	slots := make(chan struct{}, window)
	failed := make(chan string, 1)
	done := func(resp *remoting.Command, err error) {
		if err != nil || resp.Code != remoting.Success {
			select {
			case failed <- "send failed":
			default:
			}
		}
		<-slots
	}
	q := int32(0)
	for b.Loop() {
		slots <- struct{}{}
		if err := c.Go(processtest.SendRequest(topic, q, body, nil), 10*time.Second, done); err != nil {
			b.Fatal(err)
		}
		q = (q + 1) % 8
	}
	for range window {
		slots <- struct{}{}
	}
	select {
	case f := <-failed:
		b.Fatal(f)
	default:
	}
}

package main

import (
	"bufio"
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/netloop/remoting"
)

func stress(t *testing.T, addr string, n int) {
	ctx := context.Background()
	c, err := dialLean(ctx, addr, 512)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s := newTimerSender("g", "topic", "b", remoting.SerializeRocketMQ, benchUniq())
	body := make([]byte, 256)
	var ok, bad atomic.Int64
	done := make(chan struct{})
	for i := 0; i < n; i++ {
		err := c.Go(s.build(i%8, time.Now().UnixMilli()+5000, benchBody(body, uint64(i))), func(r *remoting.Command, err error) {
			if err != nil || r.Code != 0 {
				bad.Add(1)
			} else {
				ok.Add(1)
			}
			if ok.Load()+bad.Load() == int64(n) {
				close(done)
			}
		})
		if err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
	}
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatalf("timeout ok %d bad %d", ok.Load(), bad.Load())
	}
	if bad.Load() > 0 {
		t.Fatalf("bad %d", bad.Load())
	}
}

func TestStressPlainServer(t *testing.T) {
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	defer l.Close()
	go func() {
		conn, err := l.Accept()
		if err != nil {
			return
		}
		br := bufio.NewReader(conn)
		bw := bufio.NewWriter(conn)
		for {
			cmd, err := remoting.ReadFrame(br, 0)
			if err != nil {
				t.Logf("server read: %v", err)
				return
			}
			b, _ := remoting.EncodeFrame(remoting.NewResponse(cmd, 0, ""))
			bw.Write(b)
			if br.Buffered() == 0 {
				bw.Flush()
			}
		}
	}()
	stress(t, l.Addr().String(), 300000)
}

func TestStressNetloop(t *testing.T) {
	nb, err := startNullBroker(zerolog.New(zerolog.NewTestWriter(t)))
	if err != nil {
		t.Fatal(err)
	}
	defer nb.stop()
	for i := 0; i < 5; i++ {
		stress(t, nb.addr(), 300000)
	}
}

package auth_test

// Frames the official Go client (rocketmq-client-go/v2, WithCredentials)
// really signs, checked by this package's verifiers: captured live from
// the client against a raw listener that plays name server and broker,
// and kept as golden frames in testdata/goclient (rewritten with
// -update-goclient), so that a change of the verifier is checked against
// frames no code of ours produced.

import (
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/actors/access"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"

	"github.com/wheelmq/wheelmq/netloop/auth"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

var updateGoClient = flag.Bool("update-goclient", false, "rewrite testdata/goclient from the live Go client")

// The identity the captured frames are signed with.
const (
	goAK    = "golden-producer"
	goSK    = "golden-secret-42"
	goToken = "golden-token"
	goTopic = "GoldenTopic"
)

// fakeServer answers as a name server and a broker at once, recording
// every request frame (without its length prefix).
type fakeServer struct {
	ln     net.Listener
	mu     sync.Mutex
	frames [][]byte
	conns  []net.Conn
	wg     sync.WaitGroup
}

func startFake(t *testing.T) *fakeServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &fakeServer{ln: ln}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.SetDeadline(time.Now().Add(20 * time.Second)) // every wait has a deadline
			s.mu.Lock()
			s.conns = append(s.conns, c)
			s.mu.Unlock()
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				s.serve(c)
			}()
		}
	}()
	return s
}

func (s *fakeServer) close() {
	_ = s.ln.Close()
	s.mu.Lock()
	for _, c := range s.conns {
		_ = c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

func (s *fakeServer) serve(c net.Conn) {
	defer c.Close()
	for {
		var n [4]byte
		if _, err := io.ReadFull(c, n[:]); err != nil {
			return
		}
		size := binary.BigEndian.Uint32(n[:])
		if size > 1<<20 {
			return
		}
		frame := make([]byte, size)
		if _, err := io.ReadFull(c, frame); err != nil {
			return
		}
		cmd, err := remoting.DecodeFrame(frame)
		if err != nil || cmd.IsResponse() {
			continue
		}
		s.mu.Lock()
		s.frames = append(s.frames, frame)
		s.mu.Unlock()
		resp := remoting.NewResponse(cmd, remoting.Success, "")
		switch cmd.Code {
		case remoting.GetRouteInfoByTopic:
			resp.Body = []byte(fmt.Sprintf(`{"brokerDatas":[{"brokerAddrs":{"0":"%s"},"brokerName":"broker-a","cluster":"DefaultCluster"}],`+
				`"filterServerTable":{},"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":1,"topicSysFlag":0,"writeQueueNums":1}]}`,
				s.ln.Addr()))
		case remoting.SendMessage, remoting.SendMessageV2:
			resp.SetField("msgId", "7F00000100002A9F0000000000000000")
			resp.SetField("queueId", "0")
			resp.SetField("queueOffset", "0")
		}
		if cmd.IsOneway() {
			continue
		}
		out, _ := remoting.EncodeFrame(resp)
		if _, err := c.Write(out); err != nil {
			return
		}
	}
}

// capture runs a Go producer with creds against a fake server and
// returns the frames it sent, by request code (the last of each).
func capture(t *testing.T, creds primitive.Credentials) map[int32][]byte {
	t.Helper()
	rlog.SetLogLevel("error")
	s := startFake(t)
	defer s.close()
	p, err := producer.NewDefaultProducer(
		producer.WithNsResolver(primitive.NewPassthroughResolver([]string{s.ln.Addr().String()})),
		producer.WithGroupName("golden_pg"), producer.WithInstanceName(fmt.Sprintf("golden-%d", time.Now().UnixNano())),
		producer.WithCredentials(creds), producer.WithRetry(0), producer.WithSendMsgTimeout(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	msg := primitive.NewMessage(goTopic, []byte(`{"order":42,"note":"golden"}`))
	msg.WithTag("TagA")
	msg.WithKeys([]string{"k1"})
	if _, err := p.SendSync(ctx, msg); err != nil {
		t.Fatalf("send through the fake broker: %v", err)
	}
	_ = p.Shutdown()
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[int32][]byte{}
	for _, f := range s.frames {
		cmd, _ := remoting.DecodeFrame(f)
		out[cmd.Code] = f
	}
	return out
}

// checkFrame holds a frame to both verifiers: signed by goSK, refused
// with another secret or with one byte of the body or a field changed.
func checkFrame(t *testing.T, name string, frame []byte) {
	t.Helper()
	cmd, err := remoting.DecodeFrame(frame)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if cmd.ExtFields[auth.FieldAccessKey] != goAK || cmd.ExtFields[auth.FieldSignature] == "" {
		t.Fatalf("%s: not signed: %v", name, cmd.ExtFields)
	}
	if !auth.Verify(cmd, goSK) {
		t.Fatalf("%s: the Go client's signature does not verify (fields %v)", name, cmd.ExtFields)
	}
	if auth.Verify(cmd, goSK+"x") {
		t.Fatalf("%s: verifies with a wrong secret", name)
	}
	for k := range cmd.ExtFields {
		if k == auth.FieldSignature || k == auth.FieldSecurityToken {
			continue
		}
		cp := *cmd
		cp.ExtFields = map[string]string{}
		for k2, v := range cmd.ExtFields {
			cp.ExtFields[k2] = v
		}
		cp.ExtFields[k] += "!"
		if auth.Verify(&cp, goSK) {
			t.Fatalf("%s: verifies with field %s changed", name, k)
		}
	}
	if len(cmd.Body) > 0 {
		cp := *cmd
		cp.Body = append([]byte{}, cmd.Body...)
		cp.Body[0] ^= 1
		if auth.Verify(&cp, goSK) {
			t.Fatalf("%s: verifies with the body changed", name)
		}
	}
	// The hot path's verifier agrees.
	acl, err := access.ParsePlainACL([]byte("accounts:\n  - {accessKey: "+goAK+", secretKey: "+goSK+", defaultTopicPerm: PUB|SUB}\n"), "g.yml")
	if err != nil {
		t.Fatal(err)
	}
	g := auth.NewGuard(auth.GuardOptions{Source: auth.Fixed{Dir: acl}})
	var v remoting.HeaderView
	if err := v.Parse(frame); err == nil {
		var c auth.ViewCache
		if !g.AllowView(netip.MustParseAddrPort("127.0.0.1:1"), &v, auth.TopicNeed(goTopic, auth.PermPub), &c) {
			t.Fatalf("%s: AllowView declines the Go client's frame", name)
		}
	}
	if ref := g.Check(netip.MustParseAddrPort("127.0.0.1:1"), cmd, auth.Needs{}); ref != nil {
		t.Fatalf("%s: %v", name, ref)
	}
}

// TestGoClientSignsAsWeVerify captures what the Go client signs now.
func TestGoClientSignsAsWeVerify(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the Go client")
	}
	for _, c := range []struct {
		name  string
		creds primitive.Credentials
	}{
		{"plain", primitive.Credentials{AccessKey: goAK, SecretKey: goSK}},
		// The Go client sends SecurityToken but does not sign it.
		{"token", primitive.Credentials{AccessKey: goAK, SecretKey: goSK, SecurityToken: goToken}},
	} {
		frames := capture(t, c.creds)
		for _, code := range []int32{remoting.GetRouteInfoByTopic, remoting.SendMessage} {
			f, ok := frames[code]
			if !ok {
				var got []int32
				for k := range frames {
					got = append(got, k)
				}
				t.Fatalf("%s: the Go client sent no request %d (sent %v)", c.name, code, got)
			}
			checkFrame(t, fmt.Sprintf("%s/%d", c.name, code), f)
		}
		for code, f := range frames {
			checkFrame(t, fmt.Sprintf("%s/%d", c.name, code), f)
			if *updateGoClient {
				path := filepath.Join("testdata", "goclient", fmt.Sprintf("%s-%d.frame", c.name, code))
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, f, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
}

// TestGoClientGoldenFrames checks the frames kept in testdata/goclient.
func TestGoClientGoldenFrames(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "goclient", "*.frame"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 4 {
		t.Fatalf("%d golden frames in testdata/goclient; run go test -run GoClientSigns -update-goclient", len(files))
	}
	sawSend, sawToken := false, false
	for _, path := range files {
		f, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		checkFrame(t, filepath.Base(path), f)
		sawSend = sawSend || strings.HasSuffix(path, "-10.frame")
		sawToken = sawToken || strings.HasPrefix(filepath.Base(path), "token-")
	}
	if !sawSend || !sawToken {
		t.Fatal("golden frames lack a send or a SecurityToken frame")
	}
}

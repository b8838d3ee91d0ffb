package producer_test

// A scripted fake RocketMQ cluster for the producer's tests: real TCP
// listeners speaking the remoting framing, one name server and any number
// of brokers, each answering send requests as its script says (a code,
// garbage bytes, nothing, or a closed connection).

import (
	"encoding/json"
	"fmt"
	"net"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// fakeServer is one TCP listener answering remoting requests.
type fakeServer struct {
	*tcpServer
	t      testing.TB
	handle func(c *fakeConn, req *remoting.Command)

	mu   sync.Mutex
	reqs []*remoting.Command // every request received, in order
}

// tcpServer accepts connections on a loopback listener and serves each on a
// goroutine of its own; stop closes the listener and every connection and
// waits for the server's goroutines. The fake and the instant broker of the
// benchmarks share it.
type tcpServer struct {
	ln     net.Listener
	connMu sync.Mutex
	conns  []net.Conn
	wg     sync.WaitGroup
}

// listenTCP listens on a free loopback port.
func listenTCP(tb testing.TB) *tcpServer {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	return &tcpServer{ln: ln}
}

// start accepts connections until stop (a test cleanup) and serves each
// with serve, which closes it when done.
func (s *tcpServer) start(tb testing.TB, serve func(net.Conn)) {
	s.wg.Add(1)
	go s.accept(serve)
	tb.Cleanup(s.stop)
}

func (s *tcpServer) addr() string { return s.ln.Addr().String() }

func (s *tcpServer) accept(serve func(net.Conn)) {
	defer s.wg.Done()
	for {
		conn, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.connMu.Lock()
		s.conns = append(s.conns, conn)
		s.connMu.Unlock()
		s.later(func() { serve(conn) })
	}
}

// later runs f on a goroutine the server waits for when it stops.
func (s *tcpServer) later(f func()) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		f()
	}()
}

// stop closes the listener and every connection and waits for the
// server's goroutines.
func (s *tcpServer) stop() {
	_ = s.ln.Close()
	s.connMu.Lock()
	for _, c := range s.conns {
		_ = c.Close()
	}
	s.connMu.Unlock()
	s.wg.Wait()
}

// fakeConn is the server side of one connection.
type fakeConn struct {
	conn net.Conn
	mu   sync.Mutex
}

// send writes cmd as one frame.
func (c *fakeConn) send(cmd *remoting.Command) {
	b, err := remoting.EncodeFrame(cmd)
	if err != nil {
		panic(err)
	}
	c.write(b)
}

// write writes raw bytes.
func (c *fakeConn) write(b []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, _ = c.conn.Write(b)
}

// reply answers req with code and fields, unless req is oneway.
func (c *fakeConn) reply(req *remoting.Command, code int32, remark string, ext map[string]string) {
	if req.IsOneway() {
		return
	}
	resp := remoting.NewResponse(req, code, remark)
	for k, v := range ext {
		resp.SetField(k, v)
	}
	c.send(resp)
}

// startFake listens on loopback and serves every connection with handle,
// called on the connection's read goroutine.
func startFake(t testing.TB, handle func(c *fakeConn, req *remoting.Command)) *fakeServer {
	t.Helper()
	s := &fakeServer{tcpServer: listenTCP(t), t: t, handle: handle}
	s.start(t, func(conn net.Conn) { s.serve(&fakeConn{conn: conn}) })
	return s
}

func (s *fakeServer) serve(c *fakeConn) {
	defer c.conn.Close()
	for {
		req, err := remoting.ReadFrame(c.conn, 0)
		if err != nil {
			return
		}
		s.mu.Lock()
		s.reqs = append(s.reqs, req)
		s.mu.Unlock()
		s.handle(c, req)
	}
}

// requests returns the requests received with one of codes.
func (s *fakeServer) requests(codes ...int32) []*remoting.Command {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*remoting.Command
	for _, r := range s.reqs {
		for _, c := range codes {
			if r.Code == c {
				out = append(out, r)
			}
		}
	}
	return out
}

// action is how a fake broker answers one send.
type action struct {
	code    int32         // response code (with the success fields when 0)
	remark  string        // response remark
	garbage bool          // write bytes that are not a frame
	silent  bool          // answer nothing
	delay   time.Duration // answer after this long
}

// fakeBroker is a broker of the fake cluster.
type fakeBroker struct {
	name   string
	srv    *fakeServer
	script atomic.Pointer[func(n int, req *remoting.Command) action] // n counts this broker's sends from 1
	sends  atomic.Int32
	// outstanding and maxOutstanding count delayed sends not yet answered.
	outstanding, maxOutstanding atomic.Int32
}

// routeSpec is a topic's route in the fake name server.
type routeSpec struct {
	brokers []string // broker names
	queues  int32
	perm    int32
	// servedBy, when set, maps a broker name to the fake broker whose
	// address the route gives it (a group's master moved there).
	servedBy map[string]string
	// noMaster lists the brokers as replicas only (brokerId 1): a
	// replicated group between two masters.
	noMaster bool
}

// fakeCluster is a name server and brokers.
type fakeCluster struct {
	t       testing.TB
	ns      *fakeServer
	brokers map[string]*fakeBroker

	mu     sync.Mutex
	routes map[string]routeSpec // topics the name server knows
}

// newFakeCluster starts a name server and brokers with the given names;
// every broker answers SUCCESS until its script is set.
func newFakeCluster(t testing.TB, brokers ...string) *fakeCluster {
	fc := &fakeCluster{t: t, brokers: map[string]*fakeBroker{}, routes: map[string]routeSpec{}}
	for _, name := range brokers {
		b := &fakeBroker{name: name}
		b.srv = startFake(t, func(c *fakeConn, req *remoting.Command) { fc.brokerHandle(b, c, req) })
		fc.brokers[name] = b
	}
	fc.ns = startFake(t, fc.nsHandle)
	return fc
}

// setRoute makes the name server know topic.
func (fc *fakeCluster) setRoute(topic string, r routeSpec) {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	fc.routes[topic] = r
}

// routeBody builds the TopicRouteData JSON of r.
func (fc *fakeCluster) routeBody(r routeSpec) []byte {
	type qd struct {
		BrokerName     string `json:"brokerName"`
		ReadQueueNums  int32  `json:"readQueueNums"`
		WriteQueueNums int32  `json:"writeQueueNums"`
		Perm           int32  `json:"perm"`
	}
	type bd struct {
		Cluster     string            `json:"cluster"`
		BrokerName  string            `json:"brokerName"`
		BrokerAddrs map[string]string `json:"brokerAddrs"`
	}
	var body struct {
		QueueDatas  []qd `json:"queueDatas"`
		BrokerDatas []bd `json:"brokerDatas"`
	}
	for _, name := range r.brokers {
		body.QueueDatas = append(body.QueueDatas, qd{name, r.queues, r.queues, r.perm})
		srv := name
		if by, ok := r.servedBy[name]; ok {
			srv = by
		}
		id := "0"
		if r.noMaster {
			id = "1"
		}
		body.BrokerDatas = append(body.BrokerDatas, bd{"C", name, map[string]string{id: fc.brokers[srv].srv.addr()}})
	}
	b, _ := json.Marshal(body)
	return b
}

func (fc *fakeCluster) nsHandle(c *fakeConn, req *remoting.Command) {
	if req.Code != remoting.GetRouteInfoByTopic {
		c.reply(req, remoting.RequestCodeNotSupported, "not a name server request", nil)
		return
	}
	fc.mu.Lock()
	r, ok := fc.routes[req.Field("topic")]
	fc.mu.Unlock()
	if !ok {
		c.reply(req, remoting.TopicNotExist, "No topic route info in name server for the topic: "+req.Field("topic"), nil)
		return
	}
	resp := remoting.NewResponse(req, remoting.Success, "")
	resp.Body = fc.routeBody(r)
	c.send(resp)
}

func (fc *fakeCluster) brokerHandle(b *fakeBroker, c *fakeConn, req *remoting.Command) {
	switch req.Code {
	case remoting.HeartBeat, remoting.UnregisterClient:
		c.reply(req, remoting.Success, "", nil)
		return
	case remoting.SendMessageV2, remoting.SendBatchMessage:
	default:
		c.reply(req, remoting.RequestCodeNotSupported, "", nil)
		return
	}
	n := int(b.sends.Add(1))
	a := action{}
	if f := b.script.Load(); f != nil {
		a = (*f)(n, req)
	}
	answer := func() {
		switch {
		case a.silent:
		case a.garbage:
			c.write([]byte{0, 0, 0, 8, 9, 9, 9, 9, 1, 2, 3, 4})
		case a.code != remoting.Success:
			c.reply(req, a.code, a.remark, nil)
		default:
			c.reply(req, remoting.Success, "", map[string]string{
				"msgId":         fmt.Sprintf("7F00000100002A9F%016X", n),
				"queueId":       req.Field("e"),
				"queueOffset":   strconv.Itoa(n - 1),
				"transactionId": "tx",
				"MSG_REGION":    "DefaultRegion",
				"TRACE_ON":      "true",
			})
		}
	}
	if a.delay <= 0 {
		answer()
		return
	}
	if now := b.outstanding.Add(1); now > b.maxOutstanding.Load() {
		b.maxOutstanding.Store(now) // only the connection's reader raises it
	}
	b.srv.later(func() {
		time.Sleep(a.delay)
		b.outstanding.Add(-1)
		answer()
	})
}

// setScript sets how b answers sends; nil: SUCCESS.
func (b *fakeBroker) setScript(f func(n int, req *remoting.Command) action) {
	if f == nil {
		b.script.Store(nil)
		return
	}
	b.script.Store(&f)
}

// sendsTo returns the send requests broker name received.
func (fc *fakeCluster) sendsTo(name string) []*remoting.Command {
	return fc.brokers[name].srv.requests(remoting.SendMessageV2, remoting.SendBatchMessage)
}

// goroutineCheck fails the test if, at its end, more goroutines run than
// when it was called (it waits a little for goroutines that are ending).
func goroutineCheck(t testing.TB) func() {
	before := runtime.NumGoroutine()
	return func() {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for runtime.NumGoroutine() > before {
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<20)
				t.Fatalf("%d goroutines, %d before:\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

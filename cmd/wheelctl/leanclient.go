package main

// The lean client of `wheelctl bench-timer`: just enough of the RocketMQ
// remoting protocol to send timer messages and long-poll them back, with far
// less work per message than the official Go client.
//
//   - leanConn pipelines requests on one TCP connection: callers encode
//     frames into a shared buffer and a writer goroutine flushes whatever has
//     accumulated with one write, so under load many frames share a syscall;
//     a window bounds the requests in flight; responses are matched by opaque.
//   - Control requests (UPDATE_AND_CREATE_TOPIC, GET_ROUTEINFO_BY_TOPIC) and
//     pulls use the shared remoting.Client.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/message"
)

// errLeanClosed is returned for requests on a lean connection that is gone.
var errLeanClosed = errors.New("lean connection closed")

// leanConn is a pipelined remoting connection.
type leanConn struct {
	addr   string
	conn   net.Conn
	slots  chan struct{} // one token per request in flight
	opaque atomic.Int32

	outMu sync.Mutex
	out   []byte // encoded frames not yet handed to the writer (guarded by outMu)
	spare []byte // the writer's other buffer (writer goroutine only)
	kick  chan struct{}

	pendMu  sync.Mutex
	pending map[int32]func(*remoting.Command, error) // nil once closed

	once   sync.Once
	err    error
	closed chan struct{}
	wg     sync.WaitGroup
}

// dialLean connects to addr with at most window requests in flight.
func dialLean(ctx context.Context, addr string, window int) (*leanConn, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("lean dial %s: %w", addr, err)
	}
	if window < 1 {
		window = 1
	}
	c := &leanConn{
		addr: addr, conn: conn, slots: make(chan struct{}, window), kick: make(chan struct{}, 1),
		pending: make(map[int32]func(*remoting.Command, error), window), closed: make(chan struct{}),
	}
	c.wg.Add(2)
	go c.writeLoop()
	go c.readLoop()
	return c, nil
}

// Go sends req and calls done with its response (or an error) on the read
// goroutine; done must not block. Go blocks while the window is full.
func (c *leanConn) Go(req *remoting.Command, done func(*remoting.Command, error)) error {
	select {
	case c.slots <- struct{}{}:
	case <-c.closed:
		return fmt.Errorf("lean send code %d to %s: %w (%w)", req.Code, c.addr, errLeanClosed, c.err)
	}
	req.Opaque = c.opaque.Add(1)
	req.Flag &^= remoting.FlagResponse | remoting.FlagOneway
	c.pendMu.Lock()
	if c.pending == nil {
		c.pendMu.Unlock()
		<-c.slots
		return fmt.Errorf("lean send code %d to %s: %w (%w)", req.Code, c.addr, errLeanClosed, c.err)
	}
	c.pending[req.Opaque] = done
	c.pendMu.Unlock()
	c.outMu.Lock()
	out, err := remoting.AppendFrame(c.out, req)
	c.out = out
	c.outMu.Unlock()
	if err != nil {
		c.take(req.Opaque)
		<-c.slots
		return fmt.Errorf("lean encode code %d: %w", req.Code, err)
	}
	select {
	case c.kick <- struct{}{}:
	default:
	}
	return nil
}

// Call sends req and waits for its response.
func (c *leanConn) Call(ctx context.Context, req *remoting.Command) (*remoting.Command, error) {
	type result struct {
		resp *remoting.Command
		err  error
	}
	ch := make(chan result, 1)
	if err := c.Go(req, func(r *remoting.Command, err error) { ch <- result{r, err} }); err != nil {
		return nil, err
	}
	select {
	case r := <-ch:
		return r.resp, r.err
	case <-ctx.Done():
		return nil, fmt.Errorf("lean call code %d to %s: %w", req.Code, c.addr, ctx.Err())
	}
}

// take removes and returns the callback of opaque.
func (c *leanConn) take(opaque int32) func(*remoting.Command, error) {
	c.pendMu.Lock()
	defer c.pendMu.Unlock()
	done := c.pending[opaque]
	delete(c.pending, opaque)
	return done
}

// writeLoop writes whatever frames accumulated since its last write.
func (c *leanConn) writeLoop() {
	defer c.wg.Done()
	for {
		select {
		case <-c.kick:
		case <-c.closed:
			return
		}
		c.outMu.Lock()
		buf := c.out
		if len(buf) == 0 { // already written by an earlier wake-up; keep both buffers apart
			c.outMu.Unlock()
			continue
		}
		c.out = c.spare[:0]
		c.outMu.Unlock()
		if _, err := c.conn.Write(buf); err != nil {
			c.fail(fmt.Errorf("write: %w", err))
			return
		}
		c.spare = buf[:0]
	}
}

// readLoop delivers responses to their callbacks.
func (c *leanConn) readLoop() {
	defer c.wg.Done()
	br := bufio.NewReaderSize(c.conn, 256<<10)
	for {
		cmd, err := remoting.ReadFrame(br, 0)
		if err != nil {
			c.fail(fmt.Errorf("read: %w", err))
			return
		}
		if !cmd.IsResponse() {
			continue // server requests (e.g. NOTIFY_CONSUMER_IDS_CHANGED) are not for a producer
		}
		if done := c.take(cmd.Opaque); done != nil {
			<-c.slots
			done(cmd, nil)
		}
	}
}

// fail closes the connection once and fails every request in flight.
func (c *leanConn) fail(cause error) {
	c.once.Do(func() {
		c.err = cause
		_ = c.conn.Close()
		close(c.closed)
		c.pendMu.Lock()
		pending := c.pending
		c.pending = nil
		c.pendMu.Unlock()
		for _, done := range pending {
			done(nil, fmt.Errorf("lean connection to %s: %w (%w)", c.addr, errLeanClosed, cause))
		}
	})
}

// Close closes the connection and waits for its goroutines.
func (c *leanConn) Close() {
	c.fail(errors.New("closed by caller"))
	c.wg.Wait()
}

// timerSender builds SEND_MESSAGE_V2 (310) requests for timer messages,
// reusing one header map: it must be used by one goroutine, and each
// request must be handed to leanConn.Go (which encodes it at once) before
// the next is built.
type timerSender struct {
	group, topic, broker string
	serialize            remoting.SerializeType
	uniq                 *message.UniqKeyGenerator
	ext                  map[string]string
	props                []byte
	cmd                  remoting.Command
}

func newTimerSender(group, topic, broker string, serialize remoting.SerializeType, uniq *message.UniqKeyGenerator) *timerSender {
	s := &timerSender{group: group, topic: topic, broker: broker, serialize: serialize, uniq: uniq}
	// Short V2 keys, as the official clients send for 310/320 (facts 2.3).
	s.ext = map[string]string{
		"a": group, "b": topic, "c": "TBW102", "d": "4", "f": "0", "h": "0",
		"j": "0", "k": "false", "m": "false", "n": broker,
	}
	return s
}

// build returns the request for one message due at dueMs (0: an ordinary
// message) to queue q. The returned command is reused by the next call.
func (s *timerSender) build(q int, dueMs int64, body []byte) *remoting.Command {
	s.props = s.props[:0]
	if dueMs > 0 {
		s.props = message.AppendProperty(s.props, message.PropTimerDeliverMS, strconv.FormatInt(dueMs, 10))
	}
	s.props = message.AppendProperty(s.props, message.PropUniqKey, s.uniq.Next())
	s.props = message.AppendProperty(s.props, message.PropWait, "true")
	s.ext["e"] = strconv.Itoa(q)
	s.ext["g"] = strconv.FormatInt(time.Now().UnixMilli(), 10)
	s.ext["i"] = string(s.props)
	s.cmd = remoting.Command{Code: remoting.SendMessageV2, Language: "GO", Version: remoting.BrokerVersion,
		ExtFields: s.ext, Body: body, Serialize: s.serialize}
	return &s.cmd
}

// createTopic creates topic with queues read and write queues (perm RW).
func createTopic(ctx context.Context, c *remoting.Client, topic string, queues int) error {
	q := strconv.Itoa(queues)
	resp, err := c.Invoke(ctx, remoting.NewRequest(remoting.UpdateAndCreateTopic, map[string]string{
		"topic": topic, "readQueueNums": q, "writeQueueNums": q, "perm": "6",
		"topicFilterType": "SINGLE_TAG", "topicSysFlag": "0", "order": "false",
	}, nil))
	if err != nil {
		return fmt.Errorf("create topic %s: %w", topic, err)
	}
	if resp.Code != remoting.Success {
		return fmt.Errorf("create topic %s: code %d: %s", topic, resp.Code, resp.Remark)
	}
	return nil
}

// resolveBroker asks a name server for the master address of the broker
// serving TBW102.
func resolveBroker(ctx context.Context, namesrv string) (string, error) {
	c, err := remoting.Dial(ctx, namesrv, remoting.ClientOptions{})
	if err != nil {
		return "", err
	}
	defer c.Close()
	resp, err := c.Invoke(ctx, remoting.NewRequest(remoting.GetRouteInfoByTopic, map[string]string{"topic": "TBW102"}, nil))
	if err != nil {
		return "", fmt.Errorf("route of TBW102 from %s: %w", namesrv, err)
	}
	if resp.Code != remoting.Success {
		return "", fmt.Errorf("route of TBW102 from %s: code %d: %s", namesrv, resp.Code, resp.Remark)
	}
	var route struct {
		BrokerDatas []struct {
			BrokerAddrs map[string]string `json:"brokerAddrs"`
		} `json:"brokerDatas"`
	}
	if err := json.Unmarshal(resp.Body, &route); err != nil {
		return "", fmt.Errorf("route of TBW102 from %s: %w", namesrv, err)
	}
	for _, bd := range route.BrokerDatas {
		if a := bd.BrokerAddrs["0"]; a != "" {
			return a, nil
		}
	}
	return "", fmt.Errorf("route of TBW102 from %s: no master broker", namesrv)
}

// pullLoop long-polls one queue from offset 0 until ctx ends, handing each
// non-empty response body and its arrival time to onBody. It returns the
// number of failed pulls.
func pullLoop(ctx context.Context, c *remoting.Client, group, topic string, queue, maxNums int,
	onBody func(arrival time.Time, body []byte)) int {
	var offset int64
	failures := 0
	for ctx.Err() == nil {
		req := remoting.NewRequest(remoting.PullMessage, map[string]string{
			"consumerGroup": group, "topic": topic, "queueId": strconv.Itoa(queue),
			"queueOffset": strconv.FormatInt(offset, 10), "maxMsgNums": strconv.Itoa(maxNums),
			"sysFlag": "2", "commitOffset": "0", "suspendTimeoutMillis": "5000",
			"subscription": "*", "subVersion": "0", "expressionType": "TAG",
		}, nil)
		callCtx, cancel := context.WithTimeout(ctx, 15*time.Second)
		resp, err := c.Invoke(callCtx, req)
		cancel()
		arrival := time.Now()
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			failures++
			time.Sleep(100 * time.Millisecond)
			continue
		}
		switch resp.Code {
		case remoting.Success:
			onBody(arrival, resp.Body)
		case remoting.PullNotFound, remoting.PullRetryImmediately, remoting.PullOffsetMoved:
		default:
			failures++
			time.Sleep(100 * time.Millisecond)
			continue
		}
		if next, err := strconv.ParseInt(resp.Field("nextBeginOffset"), 10, 64); err == nil {
			offset = next
		}
	}
	return failures
}

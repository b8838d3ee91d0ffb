package main

// The lean client of `wheelctl bench-timer`: just enough of the RocketMQ
// remoting protocol to send timer messages and long-poll them back, with far
// less work per message than the official Go client.
//
//   - leanConn is the shared remoting.Client (requests pipelined on one TCP
//     connection, frames coalesced into few writes, responses matched by
//     opaque) with a window bounding the requests in flight; timerSender
//     writes each request's header straight into the output buffer.
//   - Control requests (UPDATE_AND_CREATE_TOPIC, GET_ROUTEINFO_BY_TOPIC) and
//     pulls use remoting.Client directly.

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/message"
)

// leanConn is a shared remoting.Client (pipelined requests, frames of
// concurrent senders coalesced into one write, responses matched by
// opaque) with a window bounding the requests in flight.
type leanConn struct {
	*remoting.Client
	slots chan struct{} // one token per request in flight
}

// leanTimeout bounds each request of a lean connection.
const leanTimeout = 2 * time.Minute

// dialLean connects to addr with at most window requests in flight, with
// opts' signing and TLS.
func dialLean(ctx context.Context, addr string, window int, opts remoting.ClientOptions) (*leanConn, error) {
	c, err := remoting.Dial(ctx, addr, opts)
	if err != nil {
		return nil, fmt.Errorf("lean dial: %w", err)
	}
	return &leanConn{Client: c, slots: make(chan struct{}, max(window, 1))}, nil
}

// Go sends req and calls done with its response (or an error) on the
// connection's reader; done must not block and must not keep the response
// (remoting.Client.GoTransient: its strings may be kept). Go blocks while
// the window is full.
func (c *leanConn) Go(req *remoting.Command, done func(*remoting.Command, error)) error {
	select {
	case c.slots <- struct{}{}:
	case <-c.Done():
		return fmt.Errorf("lean send code %d to %s: %w (%w)", req.Code, c.Addr(), remoting.ErrClosed, c.Err())
	}
	err := c.GoTransient(req, leanTimeout, func(resp *remoting.Command, err error) {
		<-c.slots
		done(resp, err)
	})
	if err != nil {
		<-c.slots
	}
	return err
}

// Call sends req and waits for its response.
func (c *leanConn) Call(ctx context.Context, req *remoting.Command) (*remoting.Command, error) {
	return c.InvokeWithin(ctx, req, leanTimeout)
}

// Close closes the connection and waits for its goroutines.
func (c *leanConn) Close() { _ = c.Client.Close() }

// timerSender builds SEND_MESSAGE_V2 (310) requests for timer messages
// into one reused command whose header fields it writes itself
// (remoting.ExtWriter): it must be used by one goroutine, and each request
// must be handed to leanConn.Go (which encodes it at once) before the next
// is built.
type timerSender struct {
	group, topic, broker string
	uniq                 *message.UniqKeyGenerator
	props                []byte
	queue                int
	bornMs               int64
	cmd                  remoting.Command
}

func newTimerSender(group, topic, broker string, serialize remoting.SerializeType, uniq *message.UniqKeyGenerator) *timerSender {
	s := &timerSender{group: group, topic: topic, broker: broker, uniq: uniq}
	s.cmd = remoting.Command{Code: remoting.SendMessageV2, Language: "GO", Version: remoting.BrokerVersion,
		Serialize: serialize, Ext: s}
	return s
}

// build returns the request for one message due at dueMs (0: an ordinary
// message) to queue q. The returned command is reused by the next call.
func (s *timerSender) build(q int, dueMs int64, body []byte) *remoting.Command {
	now := time.Now()
	s.props = s.props[:0]
	if dueMs > 0 {
		s.props = append(s.props, message.PropTimerDeliverMS...)
		s.props = append(s.props, message.NameValueSeparator)
		s.props = strconv.AppendInt(s.props, dueMs, 10)
		s.props = append(s.props, message.PropertySeparator)
	}
	s.props = append(s.props, message.PropUniqKey...)
	s.props = append(s.props, message.NameValueSeparator)
	s.props = s.uniq.AppendNextAt(s.props, now)
	s.props = append(s.props, message.PropertySeparator)
	s.props = append(s.props, message.PropWait...)
	s.props = append(s.props, message.NameValueSeparator)
	s.props = append(s.props, "true"...)
	s.props = append(s.props, message.PropertySeparator)
	s.queue, s.bornMs = q, now.UnixMilli()
	s.cmd.Body, s.cmd.Opaque, s.cmd.Flag = body, 0, 0
	return &s.cmd
}

// WriteExt writes the header fields: the short V2 keys the official
// clients send for 310/320 (facts 2.3).
func (s *timerSender) WriteExt(e *remoting.ExtEncoder) {
	e.String("a", s.group)
	e.String("b", s.topic)
	e.String("c", "TBW102")
	e.String("d", "4")
	e.Int("e", int64(s.queue))
	e.String("f", "0")
	e.Int("g", s.bornMs)
	e.String("h", "0")
	e.Bytes("i", s.props)
	e.String("j", "0")
	e.String("k", "false")
	e.String("m", "false")
	e.String("n", s.broker)
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
func resolveBroker(ctx context.Context, namesrv string, opts remoting.ClientOptions) (string, error) {
	c, err := remoting.Dial(ctx, namesrv, opts)
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

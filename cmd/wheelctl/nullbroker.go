package main

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"

	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/netloop"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// nullBroker is the benchmark peer: a name server and broker in one port
// that acknowledge every send at once and store nothing. It measures the
// ceiling the client and the loopback network allow on this machine, so
// wheelmq's figures can be read as a ratio of it.
type nullBroker struct {
	server *netloop.Server
	offset atomic.Int64
}

func startNullBroker(log zerolog.Logger) (*nullBroker, error) {
	nb := &nullBroker{}
	nb.server = netloop.NewServer(netloop.Config{Name: "null", Addr: "127.0.0.1:0", Logger: log}, nb)
	if err := nb.server.Start(); err != nil {
		return nil, fmt.Errorf("start ack-only peer: %w", err)
	}
	return nb, nil
}

func (nb *nullBroker) addr() string { return nb.server.Addr() }

func (nb *nullBroker) OnOpen(*netloop.Conn)         {}
func (nb *nullBroker) OnClose(*netloop.Conn, error) {}

func (nb *nullBroker) OnCommand(c *netloop.Conn, cmd *remoting.Command) {
	if cmd.IsResponse() {
		return
	}
	resp := remoting.NewResponse(cmd, remoting.Success, "")
	switch cmd.Code {
	case remoting.GetRouteInfoByTopic:
		resp.Body = []byte(`{"queueDatas":[{"brokerName":"null","readQueueNums":4,"writeQueueNums":4,"perm":6,"topicSysFlag":0}],` +
			`"brokerDatas":[{"cluster":"null","brokerName":"null","brokerAddrs":{"0":"` + nb.addr() + `"}}]}`)
	case remoting.SendMessage, remoting.SendMessageV2, remoting.SendBatchMessage:
		off := nb.offset.Add(1)
		resp.SetField("msgId", fmt.Sprintf("7F00000100002A9F%016X", off))
		q := cmd.Field("queueId")
		if q == "" {
			q = cmd.Field("e")
		}
		resp.SetField("queueId", q)
		resp.SetField("queueOffset", strconv.FormatInt(off, 10))
		resp.SetField("MSG_REGION", "DefaultRegion")
		resp.SetField("TRACE_ON", "true")
	case remoting.HeartBeat, remoting.UnregisterClient:
	default: // like a broker of an older version: the request is not served
		resp.Code, resp.Remark = remoting.RequestCodeNotSupported, fmt.Sprintf(" request type %d not supported", cmd.Code)
	}
	if !cmd.IsOneway() {
		_ = c.Send(resp)
	}
}

func (nb *nullBroker) stop() { _ = nb.server.Stop(context.Background()) }

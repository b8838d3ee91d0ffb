package router

import (
	"fmt"
	"strconv"

	"github.com/wheelmq/wheelmq/actors/clients"
	"github.com/wheelmq/wheelmq/netloop"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// clientConn is a remoting connection as the clients stage's Conn: it
// writes the stage's requests (actors/clients push.go) as remoting
// requests, the header fields of each code RocketMQ's.
type clientConn struct{ *netloop.Conn }

var _ clients.Conn = clientConn{}

// Send implements clients.Conn.
func (c clientConn) Send(r clients.Request) error {
	cmd, err := pushCommand(r.Push)
	if err != nil {
		return err
	}
	cmd.Opaque = r.Opaque
	if r.Oneway {
		cmd.Flag = remoting.FlagOneway
	}
	return c.Conn.Send(cmd)
}

// pushCommand is the remoting request of a push.
func pushCommand(p clients.Push) (*remoting.Command, error) {
	switch p := p.(type) {
	case clients.ConsumerIDsChanged:
		return remoting.NewRequest(remoting.NotifyConsumerIDsChanged, map[string]string{"consumerGroup": p.Group}, nil), nil
	case clients.CheckTransaction:
		return remoting.NewRequest(remoting.CheckTransactionState, map[string]string{
			"topic":                p.Topic,
			"tranStateTableOffset": strconv.FormatInt(p.TranStateTableOffset, 10),
			"commitLogOffset":      strconv.FormatInt(p.CommitLogOffset, 10),
			"offsetMsgId":          p.OffsetMsgID,
			"msgId":                p.MsgID,
			"transactionId":        p.TransactionID,
			"bname":                p.BrokerName,
		}, p.Message), nil
	case clients.ResetOffset:
		return remoting.NewRequest(remoting.ResetConsumerClientOffset, map[string]string{
			"topic": p.Topic, "group": p.Group, "queueId": "-1",
			"timestamp": strconv.FormatInt(p.Timestamp, 10), "isForce": "false",
		}, p.Body), nil
	case clients.ReplyMessage:
		return remoting.NewRequest(remoting.PushReplyMessageToClient, map[string]string{
			"producerGroup":         p.ProducerGroup,
			"topic":                 p.Topic,
			"defaultTopic":          p.DefaultTopic,
			"defaultTopicQueueNums": strconv.Itoa(int(p.DefaultTopicQueueNums)),
			"queueId":               strconv.Itoa(int(p.QueueID)),
			"sysFlag":               strconv.Itoa(int(p.SysFlag)),
			"bornTimestamp":         strconv.FormatInt(p.BornTimestamp, 10),
			"flag":                  strconv.Itoa(int(p.Flag)),
			"properties":            p.Properties,
			"reconsumeTimes":        strconv.Itoa(int(p.ReconsumeTimes)),
			"unitMode":              "false",
			"bornHost":              p.BornHost,
			"storeHost":             p.StoreHost,
			"storeTimestamp":        strconv.FormatInt(p.StoreTimestamp, 10),
		}, p.Body), nil
	case clients.Relay:
		return remoting.NewRequest(p.RequestCode, p.Fields, p.Body), nil
	}
	return nil, fmt.Errorf("remoting client connection: no request for a %T", p)
}

// clientAnswer is a client's remoting response as the clients stage's
// Response.
func clientAnswer(connID uint64, cmd *remoting.Command) *clients.Response {
	return &clients.Response{ConnID: connID, Opaque: cmd.Opaque, Answer: clients.Answer{
		Code: cmd.Code, Remark: cmd.Remark, Fields: cmd.ExtFields, Body: cmd.Body}}
}

package router

// SET_MESSAGE_REQUEST_MODE (401): decode, call the broker API
// (actors/broker SetRequestMode), encode. The consumption model of each
// (group, topic) and the pull/POP exclusion belong to the POP engine
// (actors/pop/mode); pull.go and pop.go ask the API before they serve.

import (
	"encoding/json"
	"net/netip"

	"github.com/wheelmq/wheelmq/actors/broker"
	"github.com/wheelmq/wheelmq/netloop"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/meta"
)

// Message request modes (RocketMQ MessageRequestMode).
const (
	ModePull = meta.RequestModePull
	ModePop  = meta.RequestModePop
)

// setMessageRequestModeBody is RocketMQ's SetMessageRequestModeRequestBody.
type setMessageRequestModeBody struct {
	Topic            string `json:"topic"`
	ConsumerGroup    string `json:"consumerGroup"`
	Mode             string `json:"mode"`
	PopShareQueueNum int32  `json:"popShareQueueNum"`
}

// handleSetRequestMode serves SET_MESSAGE_REQUEST_MODE (401).
func (r *Router) handleSetRequestMode(c *netloop.Conn, cmd *remoting.Command) *Refusal {
	var body setMessageRequestModeBody
	if err := json.Unmarshal(cmd.Body, &body); err != nil {
		return refuse(remoting.InvalidParameter, "body is not a SetMessageRequestModeRequestBody: %v", err)
	}
	remote, _ := netip.ParseAddrPort(c.RemoteAddr())
	r.core.SetRequestMode(broker.Caller{Protocol: broker.Remoting, Remote: remote},
		broker.SetRequestMode{Group: body.ConsumerGroup, Topic: body.Topic, Mode: body.Mode, PopShareQueueNum: body.PopShareQueueNum},
		func(err *broker.Error) {
			if ref := refusalOf(err); ref != nil {
				r.reply(c, cmd, ref.Code, ref.Remark)
				return
			}
			r.reply(c, cmd, remoting.Success, "")
		})
	return nil
}

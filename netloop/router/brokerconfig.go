package router

// GET_BROKER_CONFIG (26) and UPDATE_BROKER_CONFIG (25): mqadmin
// getBrokerConfig / updateBrokerConfig, rocketmq-dashboard's broker
// configuration page.
//
// 26 answers as AdminBrokerProcessor.getBrokerConfig does: the header field
// version holds the configuration's DataVersion as JSON
// ({"stateVersion":0,"timestamp":ms,"counter":n}), the body the
// configuration as properties text, "key=value" lines sorted by key
// (broker.Config, actors/broker/configkeys.go lists them). Java leaves the body out when the text is
// empty (its client then fails on the missing body); wheelmq's never is.
//
// 25 carries properties text (MixAll.properties2String: unsorted
// "key=value" lines). Unlike Java, which applies every key it knows and
// silently skips the rest (refusing only its configBlackList), wheelmq
// applies an update whole or not at all (broker.UpdateConfig, which the
// console's Configuration page calls too): NO_PERMISSION when a key is
// fixed, INVALID_PARAMETER for an unknown key or a bad value. A key given
// twice counts once, the last value winning, as java.util.Properties reads
// it. An empty body changes nothing (SUCCESS, the version unchanged).
//
// Under access control both are admin requests (authz.go).

import (
	"encoding/json"
	"strings"

	"github.com/wheelmq/wheelmq/actors/broker"
	"github.com/wheelmq/wheelmq/netloop"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/netloop/remoting/javaprops"
)

// maxConfigBody bounds an UPDATE_BROKER_CONFIG body (a few keys).
const maxConfigBody = 64 << 10

func (r *Router) handleGetBrokerConfig(c *netloop.Conn, cmd *remoting.Command) *Refusal {
	r.core.Config(callerOf(c, cmd), func(cfg *broker.BrokerConfig, err *broker.Error) {
		if err != nil {
			r.refuse(c, cmd, refusalOf(err))
			return
		}
		version, jerr := json.Marshal(cfg.Version)
		if jerr != nil {
			r.refuse(c, cmd, refuse(remoting.SystemError, "encode the configuration version: %v", jerr))
			return
		}
		resp := remoting.NewResponse(cmd, remoting.Success, "")
		resp.SetField("version", string(version))
		resp.Body = javaprops.Encode(cfg.Values())
		r.send(c, cmd, resp)
	})
	return nil
}

func (r *Router) handleUpdateBrokerConfig(c *netloop.Conn, cmd *remoting.Command) *Refusal {
	if len(cmd.Body) > maxConfigBody {
		return refuse(remoting.InvalidParameter, "[CONFIG_NOT_CHANGED]the body holds %d bytes, more than %d", len(cmd.Body), maxConfigBody)
	}
	entries, err := javaprops.Parse(cmd.Body)
	if err != nil {
		return refuse(remoting.InvalidParameter, "[CONFIG_NOT_CHANGED]the body is not Java properties text: %v", err)
	}
	values := make(map[string]string, len(entries))
	for _, e := range entries {
		values[e.Key] = strings.TrimSpace(e.Value) // as properties2Object and mqadmin trim
	}
	r.core.UpdateConfig(callerOf(c, cmd), values, func(_ *broker.BrokerConfig, err *broker.Error) { r.answer(c, cmd, err) })
	return nil
}

package nsrvcodec

import (
	"fmt"
	"strconv"

	"github.com/wheelmq/wheelmq/actors/namesrv"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/netloop/remoting/javaprops"
)

// wireCodes maps each namesrv.Status to the RocketMQ response code a
// remoting client gets (a test checks every status has one).
var wireCodes = map[namesrv.Status]int32{
	namesrv.OK:            remoting.Success,
	namesrv.Failed:        remoting.SystemError,
	namesrv.Invalid:       remoting.InvalidParameter,
	namesrv.TopicNotFound: remoting.TopicNotExist,
	namesrv.NotFound:      remoting.QueryNotFound,
	namesrv.Fenced:        namesrv.CodeFencedMasterEpoch,
	namesrv.Unsupported:   remoting.RequestCodeNotSupported,
}

// wireCode is the response code of s (SYSTEM_ERROR for a status missing
// from wireCodes).
func wireCode(s namesrv.Status) int32 {
	if c, ok := wireCodes[s]; ok {
		return c
	}
	return remoting.SystemError
}

// kvTable is RocketMQ's KVTable, the body of GET_KVLIST_BY_NAMESPACE and
// of the REGISTER_BROKER response.
type kvTable struct {
	Table map[string]string `json:"table"`
}

// Refusal is the response to req when Decode failed with err:
// REQUEST_CODE_NOT_SUPPORTED for a code the name server does not serve,
// else the status of err (namesrv.StatusOf) with its text as remark.
func Refusal(req *remoting.Command, err error) *remoting.Command {
	if err == errUnsupported {
		return remoting.NewResponse(req, remoting.RequestCodeNotSupported,
			fmt.Sprintf(" request type %d not supported", req.Code))
	}
	return remoting.NewResponse(req, wireCode(namesrv.StatusOf(err)), err.Error())
}

// Encode is the response to req of the registry's answer: the status's
// code and remark, and on OK the answer's header fields and body as
// RocketMQ's name server writes them (compact JSON bodies, see the
// namesrv package doc; GET_NAMESRV_CONFIG as Java properties text).
func Encode(req *remoting.Command, ans namesrv.Answer) *remoting.Command {
	resp := remoting.NewResponse(req, wireCode(ans.Status), ans.Remark)
	if ans.Status != namesrv.OK {
		return resp
	}
	var body any
	switch req.Code {
	case remoting.RegisterBroker:
		if ans.HAServerAddr != "" {
			resp.SetField(fieldHAServerAddr, ans.HAServerAddr)
		}
		if ans.MasterAddr != "" {
			resp.SetField(fieldMasterAddr, ans.MasterAddr)
		}
		if ans.Table != nil {
			body = kvTable{Table: ans.Table}
		}
	case remoting.GetRouteInfoByTopic:
		body = ans.Route
	case remoting.GetBrokerClusterInfo:
		body = ans.Cluster
	case remoting.GetAllTopicListFromNameserver, remoting.GetSystemTopicListFromNS, remoting.GetTopicsByCluster:
		body = ans.Topics
	case remoting.GetKVConfig:
		resp.SetField(fieldValue, ans.Value)
	case remoting.GetKVListByNamespace:
		body = kvTable{Table: ans.Table}
	case remoting.WipeWritePermOfBroker:
		resp.SetField(fieldWipeTopicCount, strconv.Itoa(ans.TopicCount))
	case remoting.AddWritePermOfBroker:
		resp.SetField(fieldAddTopicCount, strconv.Itoa(ans.TopicCount))
	case remoting.GetNamesrvConfig:
		resp.Body = javaprops.Encode(ans.Settings)
	}
	if body != nil {
		b, err := namesrv.CompactJSON(body)
		if err != nil {
			return remoting.NewResponse(req, remoting.SystemError, err.Error())
		}
		resp.Body = b
	}
	return resp
}

package namesrv

import (
	"errors"
	"fmt"
	"time"

	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// Handle serves one name-server request at time now and returns its
// response (never nil, even for a nil request). It never panics on bad
// input; see the package doc for the codes served and the error mapping.
func (r *Registry) Handle(req *remoting.Command, now time.Time) *remoting.Command {
	return r.HandleConn(req, now, 0)
}

// HandleConn is Handle for a request that came over the name-server
// connection conn (0: unknown): a REGISTER_BROKER binds the broker's entry
// to conn, so that DropConn(conn) removes it when the connection closes.
func (r *Registry) HandleConn(req *remoting.Command, now time.Time, conn uint64) *remoting.Command {
	if req == nil {
		return remoting.NewResponse(&remoting.Command{}, remoting.SystemError, "namesrv: nil request")
	}
	switch req.Code {
	case remoting.RegisterBroker:
		return r.handleRegister(req, now, conn)
	case remoting.UnregisterBroker:
		return r.handleUnregister(req)
	case remoting.GetRouteInfoByTopic:
		return r.handleRoute(req)
	case remoting.GetBrokerClusterInfo:
		return jsonResponse(req, r.ClusterInfo())
	case remoting.GetAllTopicListFromNameserver:
		names := r.TopicNames()
		if names == nil {
			names = []string{}
		}
		return jsonResponse(req, TopicList{TopicList: names})
	case remoting.DeleteTopicInNamesrv:
		return r.handleDeleteTopic(req)
	case remoting.PutKVConfig:
		return r.handlePutKV(req)
	case remoting.GetKVConfig:
		return r.handleGetKV(req)
	case remoting.DeleteKVConfig:
		return r.handleDeleteKV(req)
	case remoting.GetKVListByNamespace:
		return r.handleKVList(req)
	case remoting.GetSystemTopicListFromNS:
		return jsonResponse(req, r.SystemTopicList())
	case remoting.GetTopicsByCluster:
		return r.handleTopicsByCluster(req)
	case remoting.WipeWritePermOfBroker, remoting.AddWritePermOfBroker:
		return r.handleWritePerm(req)
	}
	return remoting.NewResponse(req, remoting.RequestCodeNotSupported,
		fmt.Sprintf(" request type %d not supported", req.Code))
}

// handleRegister serves REGISTER_BROKER (103).
func (r *Registry) handleRegister(req *remoting.Command, now time.Time, conn uint64) *remoting.Command {
	h, err := parseRegisterHeader(req)
	if err != nil {
		return errorResponse(req, err)
	}
	if err := checkBodyCRC(req.Body, h.bodyCRC32); err != nil {
		return errorResponse(req, err)
	}
	topics, dv, err := decodeRegisterBody(req.Body, h.compressed)
	if err != nil {
		return errorResponse(req, err)
	}
	if why := r.staleMaster(h.info, dv.StateVersion); why != "" {
		return remoting.NewResponse(req, CodeFencedMasterEpoch, why)
	}
	res, err := r.register(h.info, topics, dv, now, conn)
	if err != nil {
		return errorResponse(req, err)
	}
	resp := remoting.NewResponse(req, remoting.Success, "")
	if res.HAServerAddr != "" {
		resp.SetField(fieldHAServerAddr, res.HAServerAddr)
	}
	if res.MasterAddr != "" {
		resp.SetField(fieldMasterAddr, res.MasterAddr)
	}
	// Java's returnOrderTopicConfigToBroker (on by default): the
	// ORDER_TOPIC_CONFIG namespace as KVTable, no body without it.
	body, ok, err := r.kvListBody(NamespaceOrderTopicConfig)
	if err != nil {
		return errorResponse(req, err)
	}
	if ok {
		resp.Body = body
	}
	return resp
}

// handleUnregister serves UNREGISTER_BROKER (104). Unknown brokers are not
// an error (Java answers SUCCESS too).
func (r *Registry) handleUnregister(req *remoting.Command) *remoting.Command {
	key, err := parseBrokerKey(req)
	if err != nil {
		return errorResponse(req, err)
	}
	addr, err := requiredField(req, fieldBrokerAddr)
	if err != nil {
		return errorResponse(req, err)
	}
	r.Unregister(key, addr)
	return remoting.NewResponse(req, remoting.Success, "")
}

// handleRoute serves GET_ROUTEINFO_BY_TOPIC (105), with orderTopicConf
// from ORDER_TOPIC_CONFIG when order messages are enabled.
func (r *Registry) handleRoute(req *remoting.Command) *remoting.Command {
	topic, err := requiredField(req, fieldTopic)
	if err != nil {
		return errorResponse(req, err)
	}
	rd, ok := r.Route(topic)
	if !ok {
		return remoting.NewResponse(req, remoting.TopicNotExist,
			"No topic route info in name server for the topic: "+topic)
	}
	rd.OrderTopicConf = r.orderTopicConf(topic)
	return jsonResponse(req, rd)
}

// handleDeleteTopic serves DELETE_TOPIC_IN_NAMESRV (216): header topic
// (required) and clusterName (optional: all clusters when absent).
func (r *Registry) handleDeleteTopic(req *remoting.Command) *remoting.Command {
	topic, err := requiredField(req, fieldTopic)
	if err != nil {
		return errorResponse(req, err)
	}
	r.DeleteTopic(topic, req.Field(fieldClusterName))
	return remoting.NewResponse(req, remoting.Success, "")
}

// jsonResponse answers SUCCESS with v as compact JSON body.
func jsonResponse(req *remoting.Command, v any) *remoting.Command {
	body, err := marshalCompact(v)
	if err != nil {
		return errorResponse(req, err)
	}
	resp := remoting.NewResponse(req, remoting.Success, "")
	resp.Body = body
	return resp
}

// errorResponse maps err to INVALID_PARAMETER (ErrInvalidValue) or
// SYSTEM_ERROR, with the error text as remark.
func errorResponse(req *remoting.Command, err error) *remoting.Command {
	code := remoting.SystemError
	if errors.Is(err, ErrInvalidValue) {
		code = remoting.InvalidParameter
	}
	return remoting.NewResponse(req, code, err.Error())
}

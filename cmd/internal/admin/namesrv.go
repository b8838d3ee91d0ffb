package admin

// Name-server requests: GET_BROKER_CLUSTER_INFO (106), GET_ROUTEINFO_BY_TOPIC
// (105), GET_ALL_TOPIC_LIST_FROM_NAMESERVER (206), DELETE_TOPIC_IN_NAMESRV
// (216).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// ErrNoTopic is wrapped by Route when the name server knows no such topic.
var ErrNoTopic = fmt.Errorf("topic not found")

// Broker is one broker address known to a name server.
type Broker struct {
	Cluster, Name string
	ID            int64 // 0 = master
	Addr          string
}

// brokerData is RocketMQ's BrokerData (brokerAddrs keys are ids).
type brokerData struct {
	Cluster     string            `json:"cluster"`
	BrokerName  string            `json:"brokerName"`
	BrokerAddrs map[string]string `json:"brokerAddrs"`
}

func (bd brokerData) brokers() []Broker {
	var out []Broker
	for id, addr := range bd.BrokerAddrs {
		n, err := strconv.ParseInt(id, 10, 64)
		if err != nil {
			continue
		}
		out = append(out, Broker{Cluster: bd.Cluster, Name: bd.BrokerName, ID: n, Addr: addr})
	}
	return out
}

func sortBrokers(bs []Broker) {
	sort.Slice(bs, func(i, j int) bool {
		a, b := bs[i], bs[j]
		if a.Cluster != b.Cluster {
			return a.Cluster < b.Cluster
		}
		if a.Name != b.Name {
			return a.Name < b.Name
		}
		return a.ID < b.ID
	})
}

// decode normalizes a fastjson body and decodes it into v.
func decode(what string, body []byte, v any) error {
	norm, err := Normalize(body)
	if err != nil {
		return fmt.Errorf("%s body: %w", what, err)
	}
	if err := json.Unmarshal(norm, v); err != nil {
		return fmt.Errorf("%s body: %w", what, err)
	}
	return nil
}

// NameServers splits a name-server list, addresses separated by ';' as in
// RocketMQ's namesrvAddr, dropping blanks.
func NameServers(list string) []string {
	var out []string
	for _, a := range strings.Split(list, ";") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}

// callNamesrv sends req to the name servers of list (see NameServers) in
// turn until one answers; one that cannot be reached or does not answer
// within the timeout is skipped. An answer other than SUCCESS or ok is an
// error, as with Call, and ends the search: name servers answer alike.
func (s *Session) callNamesrv(ctx context.Context, list string, req *remoting.Command, ok ...int32) (*remoting.Command, error) {
	addrs := NameServers(list)
	if len(addrs) == 0 {
		return nil, fmt.Errorf("%s: no name server given", RequestName(req.Code))
	}
	var errs []error
	for _, addr := range addrs {
		cp := *req
		resp, err := s.Call(ctx, addr, &cp, ok...)
		var refused *RefusedError
		var notServed *NotServedError
		if err == nil || errors.As(err, &refused) || errors.As(err, &notServed) || ctx.Err() != nil {
			return resp, err
		}
		errs = append(errs, err)
	}
	return nil, errors.Join(errs...)
}

// Brokers asks the name servers (a ';'-separated list, tried in turn) for
// every broker they know, sorted by cluster, name and id.
func (s *Session) Brokers(ctx context.Context, namesrv string) ([]Broker, error) {
	resp, err := s.callNamesrv(ctx, namesrv, remoting.NewRequest(remoting.GetBrokerClusterInfo, nil, nil))
	if err != nil {
		return nil, err
	}
	var info struct {
		BrokerAddrTable map[string]brokerData `json:"brokerAddrTable"`
	}
	if err := decode("GET_BROKER_CLUSTER_INFO", resp.Body, &info); err != nil {
		return nil, err
	}
	var out []Broker
	for _, bd := range info.BrokerAddrTable {
		out = append(out, bd.brokers()...)
	}
	sortBrokers(out)
	return out, nil
}

// QueueData is one broker's share of a topic's route.
type QueueData struct {
	BrokerName     string `json:"brokerName"`
	ReadQueueNums  int    `json:"readQueueNums"`
	WriteQueueNums int    `json:"writeQueueNums"`
	Perm           int    `json:"perm"`
	TopicSysFlag   int    `json:"topicSysFlag"`
}

// Route is a topic's route: its queues per broker and the brokers'
// addresses.
type Route struct {
	Queues  []QueueData
	Brokers []Broker
}

// Master returns the master address of broker name ("" if none).
func (r Route) Master(name string) string {
	for _, b := range r.Brokers {
		if b.Name == name && b.ID == 0 {
			return b.Addr
		}
	}
	return ""
}

// Route asks the name servers (tried in turn) for a topic's route; an
// unknown topic wraps ErrNoTopic.
func (s *Session) Route(ctx context.Context, namesrv, topic string) (Route, error) {
	resp, err := s.callNamesrv(ctx, namesrv, remoting.NewRequest(remoting.GetRouteInfoByTopic,
		map[string]string{"topic": topic}, nil), remoting.TopicNotExist)
	if err != nil {
		return Route{}, err
	}
	if resp.Code == remoting.TopicNotExist {
		return Route{}, fmt.Errorf("%w: %s (name server %s)", ErrNoTopic, topic, namesrv)
	}
	var body struct {
		QueueDatas  []QueueData  `json:"queueDatas"`
		BrokerDatas []brokerData `json:"brokerDatas"`
	}
	if err := decode("GET_ROUTEINFO_BY_TOPIC", resp.Body, &body); err != nil {
		return Route{}, err
	}
	r := Route{Queues: body.QueueDatas}
	for _, bd := range body.BrokerDatas {
		r.Brokers = append(r.Brokers, bd.brokers()...)
	}
	sortBrokers(r.Brokers)
	sort.Slice(r.Queues, func(i, j int) bool { return r.Queues[i].BrokerName < r.Queues[j].BrokerName })
	return r, nil
}

// TopicNames asks the name servers (tried in turn) for every topic they
// have a route for.
func (s *Session) TopicNames(ctx context.Context, namesrv string) ([]string, error) {
	resp, err := s.callNamesrv(ctx, namesrv, remoting.NewRequest(remoting.GetAllTopicListFromNameserver, nil, nil))
	if err != nil {
		return nil, err
	}
	var body struct {
		TopicList []string `json:"topicList"`
	}
	if err := decode("GET_ALL_TOPIC_LIST_FROM_NAMESERVER", resp.Body, &body); err != nil {
		return nil, err
	}
	sort.Strings(body.TopicList)
	return body.TopicList, nil
}

// DeleteTopicInNamesrv removes a topic's route from one name server (each
// name server of a cluster holds its own routes).
func (s *Session) DeleteTopicInNamesrv(ctx context.Context, namesrv, topic string) error {
	_, err := s.Call(ctx, namesrv, remoting.NewRequest(remoting.DeleteTopicInNamesrv, map[string]string{"topic": topic}, nil))
	return err
}

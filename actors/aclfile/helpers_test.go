package aclfile

import (
	"net/netip"

	dto "github.com/prometheus/client_model/go"

	"github.com/wheelmq/wheelmq/netloop/auth"
)

type dtoMetric struct{ m dto.Metric }

var anyIP = netip.MustParseAddr("127.0.0.1")

func topicNeed(t string) auth.Need { return auth.TopicNeed(t, auth.PermPub) }
